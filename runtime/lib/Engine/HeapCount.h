//===- HeapCount.h - Counting the heap allocations of a thread ---*- C++
//-*-===//
//
// The engine replaces the global operator new (HeapCount.cpp) with one that
// counts, per thread, the allocations it makes, so that a rank can tell how
// many its step made: kernels, callbacks, transports and devices on the
// rank's thread (C allocations inside libraries such as OpenBLAS or MPI are
// theirs and not counted). A steady-state step makes none; gpipe-run
// reports the count and a test holds it to zero.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_ENGINE_HEAPCOUNT_H
#define GPIPE_RUNTIME_LIB_ENGINE_HEAPCOUNT_H

#include <cstdint>

namespace gpipe::rt {

/// Operator-new allocations the calling thread has made so far; -1 in a
/// sanitizer build, which keeps its own allocation functions (none counted).
int64_t heapAllocationsOnThisThread();

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_LIB_ENGINE_HEAPCOUNT_H
