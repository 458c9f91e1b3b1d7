/* nn_ood.h: the out-of-distribution image whose ensemble certainty mnist_nn draws:
 * a letter shipped inside the program (no file to lose), or any 28x28 PGM given by
 * --ood-image. */
#ifndef HV_NN_OOD_H
#define HV_NN_OOD_H

#include <stddef.h>
#include <stdint.h>

/* The shipped image: a white capital "A" on black, 28x28 bytes, MNIST-like. */
void nn_ood_default(uint8_t *px /* (28*28) */);

/* Reads a 28x28 PGM (P2 or P5, any maxval) into bytes 0..255. 0, or -1 with a
 * message naming the file and what is wrong. */
int nn_ood_load_pgm(const char *path, uint8_t *px /* (28*28) */, char *err, size_t errlen);

#endif /* HV_NN_OOD_H */
