//===- DTypes.cpp - Element types of the kernel ABI -------------*- C++ -*-===//
//
// The element-type helpers of Common.h, shared by every kernel library and
// the engine: bytes per element and the name the metadata spells.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Common.h"

extern "C" size_t gpipe_rt_dtype_size(gpipe_rt_dtype dtype) {
  switch (dtype) {
  case GPIPE_RT_F32:
  case GPIPE_RT_I32:
    return 4;
  case GPIPE_RT_F64:
  case GPIPE_RT_I64:
    return 8;
  case GPIPE_RT_F16:
  case GPIPE_RT_BF16:
    return 2;
  case GPIPE_RT_BOOL:
    return 1;
  }
  return 0;
}

extern "C" const char *gpipe_rt_dtype_name(gpipe_rt_dtype dtype) {
  switch (dtype) {
  case GPIPE_RT_F32:
    return "f32";
  case GPIPE_RT_F64:
    return "f64";
  case GPIPE_RT_F16:
    return "f16";
  case GPIPE_RT_BF16:
    return "bf16";
  case GPIPE_RT_I64:
    return "i64";
  case GPIPE_RT_I32:
    return "i32";
  case GPIPE_RT_BOOL:
    return "i1";
  }
  return "?";
}
