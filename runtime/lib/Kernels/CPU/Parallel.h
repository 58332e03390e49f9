//===- Parallel.h - CPU kernels split over a rank's cores -------*- C++ -*-===//
//
// A rank that runs alone in its process may use more than one core for its
// kernels (gpipe_rt_cpu_set_kernel_threads; the engine sets it with the
// BLAS threads). A kernel whose every output element, or row, is computed
// by code that reads no other element's result splits its index range over
// a small pool of workers, the calling thread included: each element is
// computed by the same instructions whichever thread runs it, so the bits
// are those of one thread for every thread count and split.
//
// The pool has one job at a time. A second caller while a job runs (two
// rank threads in one process never set more than one thread, but a test
// or an embedding program might call kernels from several threads) runs
// its range on its own thread. Waiting workers spin for half a millisecond
// (kernels come back to back within a step) and then sleep; no allocation
// after the workers are made.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_KERNELS_CPU_PARALLEL_H
#define GPIPE_RUNTIME_LIB_KERNELS_CPU_PARALLEL_H

#include <cstdint>

namespace gpipe::rt::cpu {

/// The threads kernels may split work over (1: none).
int kernelThreads();

/// Below this many elements (or their row-equivalents) a kernel runs on
/// the calling thread alone: handing work to a worker (about 1 us while it
/// spins) costs more than the work. Measured on the width-64 GPT at K = 1
/// on 2 cores: 3.8-4.0 ms a step at 16384, 3.5-3.6 at 4096, no better at
/// 2048.
constexpr int64_t kParallelGrain = 4096;

/// Runs fn(ctx, begin, end) over consecutive ranges covering [0, n), each
/// of at least `grain` indices but perhaps the last, on up to
/// kernelThreads() threads; returns when all have run.
void runParallel(int64_t n, int64_t grain,
                 void (*fn)(const void *ctx, int64_t begin, int64_t end),
                 const void *ctx);

/// body(begin, end) over [0, n) as runParallel does; on the calling thread
/// alone when one thread is set or n < 2 x grain.
template <typename F>
void parallelFor(int64_t n, int64_t grain, const F &body) {
  if (n < 2 * grain || kernelThreads() <= 1) {
    if (n > 0)
      body(int64_t(0), n);
    return;
  }
  runParallel(
      n, grain,
      [](const void *ctx, int64_t begin, int64_t end) {
        (*static_cast<const F *>(ctx))(begin, end);
      },
      &body);
}

} // namespace gpipe::rt::cpu

#endif // GPIPE_RUNTIME_LIB_KERNELS_CPU_PARALLEL_H
