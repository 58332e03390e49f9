/*===- Common.h - Status codes and element types of the runtime ---*- C -*-===*\
|*                                                                            *|
|* The pieces of the gpipe runtime's C ABI that every part shares: the status *|
|* code each `gpipe_rt_*` entry point returns, the thread-local message that  *|
|* explains a failure, and the element types kernels and files know.          *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GPIPE_RUNTIME_COMMON_H
#define GPIPE_RUNTIME_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What a `gpipe_rt_*` entry point returns. On anything but
/// `GPIPE_RT_SUCCESS`, `gpipe_rt_last_error()` says what went wrong and
/// output buffers hold unspecified values.
typedef enum gpipe_rt_status {
  GPIPE_RT_SUCCESS = 0,
  /// Shapes, ranks, attributes or pointers that do not fit together: a
  /// compiler bug or a misuse of the ABI.
  GPIPE_RT_INVALID_ARGUMENT = 1,
  /// A data-dependent error: an index or a label outside its range.
  GPIPE_RT_OUT_OF_RANGE = 2,
  /// A BLAS call that would have been rejected or overflowed its int
  /// arguments.
  GPIPE_RT_BLAS_ERROR = 3,
} gpipe_rt_status;

/// The message of the last failing call on this thread ("" if none). Valid
/// until the next failing call on the same thread.
const char *gpipe_rt_last_error(void);

/// Clears this thread's last error message.
void gpipe_rt_clear_error(void);

/// Element types. Booleans (`i1`) are one byte per element holding 0 or 1.
typedef enum gpipe_rt_dtype {
#define GPIPE_RT_DTYPE(ENUM, VALUE, NAME, BYTES) ENUM = VALUE,
#include "gpipe/Runtime/DTypes.def"
} gpipe_rt_dtype;

/// Bytes per element of `dtype`, 0 for a value outside the enum.
size_t gpipe_rt_dtype_size(gpipe_rt_dtype dtype);

/// A short lower-case name ("f32", "i64", "i1", ...), "?" if unknown.
const char *gpipe_rt_dtype_name(gpipe_rt_dtype dtype);

#ifdef __cplusplus
} // extern "C"

namespace gpipe::rt {
/// gpipe_rt_dtype_size and gpipe_rt_dtype_name from the header alone, for
/// code that does not link the runtime (the compiler).
constexpr size_t dtypeSize(gpipe_rt_dtype dtype) {
  switch (dtype) {
#define GPIPE_RT_DTYPE(ENUM, VALUE, NAME, BYTES)                               \
  case ENUM:                                                                   \
    return BYTES;
#include "gpipe/Runtime/DTypes.def"
  }
  return 0;
}
constexpr const char *dtypeName(gpipe_rt_dtype dtype) {
  switch (dtype) {
#define GPIPE_RT_DTYPE(ENUM, VALUE, NAME, BYTES)                               \
  case ENUM:                                                                   \
    return NAME;
#include "gpipe/Runtime/DTypes.def"
  }
  return "?";
}
} // namespace gpipe::rt
#endif

#endif /* GPIPE_RUNTIME_COMMON_H */
