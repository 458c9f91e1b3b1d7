/* gpu_present.h: whether a GPU test runs or reports itself skipped (77).
 *
 * A test may skip only when this machine has no GPU to test: no NVIDIA driver at all
 * (no /proc/driver/nvidia/version, no /dev/dxg under WSL), or a driver that sees no
 * device (none installed, or CUDA_VISIBLE_DEVICES hides them). Anything else the CUDA
 * runtime answers while a driver is there (a driver older than the runtime, a device
 * in a bad state, an initialisation error) is the kind of fault a GPU test exists to
 * report: the test must FAIL, not skip, and so must every error after this said 1.
 *   test_gpu_present(why, len): 1 GPU present; 0 none (skip; why says so); -1 a
 *   driver is there but CUDA failed (fail; why says how). */
#ifndef HV_TESTS_GPU_PRESENT_H
#define HV_TESTS_GPU_PRESENT_H

#include <cuda_runtime.h>
#include <stdio.h>

static int test_gpu_driver_present(void) {
  static const char *const marks[] = {"/proc/driver/nvidia/version", "/dev/dxg"};
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(marks[i], "r");
    if (f) {
      fclose(f);
      return 1;
    }
  }
  return 0;
}

static int __attribute__((unused)) test_gpu_present(char *why, size_t len) {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc == cudaSuccess && n > 0) return 1;
  if (!test_gpu_driver_present()) {
    snprintf(why, len, "no NVIDIA driver on this machine (cudaGetDeviceCount: %s)",
             rc == cudaSuccess ? "0 devices" : cudaGetErrorString(rc));
    return 0;
  }
  if (rc == cudaSuccess || rc == cudaErrorNoDevice) {
    snprintf(why, len, "the driver sees no CUDA device");
    return 0;
  }
  snprintf(why, len, "a driver is present but cudaGetDeviceCount failed: %s (error %d)", cudaGetErrorString(rc),
           (int)rc);
  return -1;
}

#endif
