//===- SingleThreadedBlas.h - OpenBLAS without its thread pool --*- C++ -*-===//
//
// gpipe-compile and gpipe-opt link OpenBLAS (the interpreter's CPU
// kernels), which starts a pool of worker threads when it is loaded, before
// main. Each worker maps a buffer of about 128 MiB as it starts; under a
// memory limit (ulimit -v) the mapping fails and OpenBLAS retries forever,
// and at exit OpenBLAS joins that worker: the tool hangs after its work is
// done. OpenBLAS reads OPENBLAS_NUM_THREADS only when it is loaded, so a
// tool calls ensureSingleThreadedBlas first thing in main: without
// OPENBLAS_NUM_THREADS=1 it sets it and executes itself again (execve ends
// the pool, stuck workers included), as gpipe-run does. The compile tools
// use BLAS only for small interpreted checks.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_TOOLS_COMMON_SINGLETHREADEDBLAS_H
#define GPIPE_TOOLS_COMMON_SINGLETHREADEDBLAS_H

#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace gpipe_tools {

inline void ensureSingleThreadedBlas(char **argv) {
  const char *value = std::getenv("OPENBLAS_NUM_THREADS");
  if (value && std::strcmp(value, "1") == 0)
    return;
  if (::setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/1) != 0)
    return;
  ::execv("/proc/self/exe", argv);
  // Could not execute again (no /proc): carry on with the pool.
}

} // namespace gpipe_tools

#endif // GPIPE_TOOLS_COMMON_SINGLETHREADEDBLAS_H
