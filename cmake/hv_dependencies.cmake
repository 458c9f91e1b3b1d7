# Finds the real dependencies: Open MPI, hwloc, OpenBLAS, zlib, threads, jansson
# (optional), and (when
# HV_ENABLE_CUDA) the CUDA toolkit with cuBLAS, NCCL and cuDNN.
find_package(Threads REQUIRED)
find_package(MPI REQUIRED COMPONENTS C)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
# jansson: hvrun --analyze / --status read the flight recorder's JSON (optional: without
# it they fail with a line saying so).
pkg_check_modules(JANSSON IMPORTED_TARGET jansson)

# OpenBLAS through its own pkg-config file when present, else CMake's FindBLAS.
pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
if(OPENBLAS_FOUND)
  add_library(hv_blas INTERFACE)
  target_link_libraries(hv_blas INTERFACE PkgConfig::OPENBLAS)
  set(HV_BLAS_LIBRARY "OpenBLAS ${OPENBLAS_VERSION}")
else()
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS REQUIRED)
  add_library(hv_blas INTERFACE)
  target_link_libraries(hv_blas INTERFACE ${BLAS_LIBRARIES})
  set(HV_BLAS_LIBRARY "${BLAS_LIBRARIES}")
endif()
find_path(HV_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread
          PATHS /usr/include/x86_64-linux-gnu /usr/include/aarch64-linux-gnu)
if(HV_CBLAS_INCLUDE_DIR)
  target_include_directories(hv_blas INTERFACE ${HV_CBLAS_INCLUDE_DIR})
endif()

set(HV_ENABLE_NCCL OFF)
set(HV_ENABLE_CUDNN OFF)
if(HV_ENABLE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # Ampere and Hopper (H100/H200); override with -DCMAKE_CUDA_ARCHITECTURES.
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  find_path(HV_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(HV_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(HV_NCCL_INCLUDE_DIR AND HV_NCCL_LIBRARY)
    set(HV_ENABLE_NCCL ON)
  endif()
  find_path(HV_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(HV_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(HV_CUDNN_INCLUDE_DIR AND HV_CUDNN_LIBRARY)
    set(HV_ENABLE_CUDNN ON)
  endif()
endif()
