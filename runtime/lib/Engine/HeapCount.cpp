//===- HeapCount.cpp - Counting the heap allocations of a thread -*- C++
//-*-===//
//
// The replaceable global allocation functions ([new.delete]), every form,
// over malloc and free with a per-thread count. Defined in the same object
// as heapAllocationsOnThisThread, which the engine calls, so that linking
// the engine links them.
//
//===----------------------------------------------------------------------===//

#include "HeapCount.h"

#include <cstdlib>
#include <new>

// A sanitizer brings its own allocation functions (the ones it checks):
// then nothing is replaced and nothing counted.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GPIPE_SANITIZED_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||     \
    __has_feature(memory_sanitizer)
#define GPIPE_SANITIZED_HEAP 1
#endif
#endif

#ifdef GPIPE_SANITIZED_HEAP

int64_t gpipe::rt::heapAllocationsOnThisThread() { return -1; }

#else

namespace {

thread_local int64_t allocations = 0;

/// On failure the new-handler runs and the allocation is retried, as the
/// standard operator new does ([new.delete.single]); without one,
/// std::bad_alloc.
void outOfMemory() {
  std::new_handler handler = std::get_new_handler();
  if (!handler)
    throw std::bad_alloc();
  handler();
}

void *allocate(std::size_t size) {
  ++allocations;
  for (;;) {
    if (void *p = std::malloc(size ? size : 1))
      return p;
    outOfMemory();
  }
}

void *allocateAligned(std::size_t size, std::align_val_t alignment) {
  ++allocations;
  std::size_t align = static_cast<std::size_t>(alignment);
  if (align < sizeof(void *))
    align = sizeof(void *);
  // aligned_alloc wants a size that is a multiple of the alignment.
  std::size_t rounded = ((size ? size : 1) + align - 1) / align * align;
  for (;;) {
    if (void *p = std::aligned_alloc(align, rounded))
      return p;
    outOfMemory();
  }
}

} // namespace

int64_t gpipe::rt::heapAllocationsOnThisThread() { return allocations; }

void *operator new(std::size_t size) { return allocate(size); }
void *operator new[](std::size_t size) { return allocate(size); }
void *operator new(std::size_t size, const std::nothrow_t &) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void *operator new[](std::size_t size, const std::nothrow_t &) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void *operator new(std::size_t size, std::align_val_t alignment) {
  return allocateAligned(size, alignment);
}
void *operator new[](std::size_t size, std::align_val_t alignment) {
  return allocateAligned(size, alignment);
}
void *operator new(std::size_t size, std::align_val_t alignment,
                   const std::nothrow_t &) noexcept {
  try {
    return allocateAligned(size, alignment);
  } catch (...) {
    return nullptr;
  }
}
void *operator new[](std::size_t size, std::align_val_t alignment,
                     const std::nothrow_t &) noexcept {
  try {
    return allocateAligned(size, alignment);
  } catch (...) {
    return nullptr;
  }
}

void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept {
  std::free(p);
}
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void *p, std::align_val_t,
                     const std::nothrow_t &) noexcept {
  std::free(p);
}
void operator delete[](void *p, std::align_val_t,
                       const std::nothrow_t &) noexcept {
  std::free(p);
}

#endif // GPIPE_SANITIZED_HEAP
