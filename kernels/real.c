/* real.c: the name of the build's real_t. */
#include "real.h"

const char *real_name(void) { return HV_REAL_F64 ? "float64" : "float32"; }
