/* data_dirs.h: where the workloads read their data sets from when --data-dir is not
 * given: Debian's Fashion-MNIST package, or the MNIST subset the trainer finds
 * (trainer/data_mnist.h, dataset_default_mnist_dir). */
#ifndef WORKLOAD_DATA_DIRS_H
#define WORKLOAD_DATA_DIRS_H

/* Debian's dataset-fashion-mnist installs the IDX files here. */
#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* The directory of an MNIST-format data set: data_dir when given (not NULL), else
 * FASHION_MNIST_DIR for dataset "fashion-mnist", else mnist_dir (the caller passes
 * dataset_default_mnist_dir(), so this library needs no trainer). */
const char *mnist_data_dir(const char *dataset, const char *data_dir, const char *mnist_dir);

#endif /* WORKLOAD_DATA_DIRS_H */
