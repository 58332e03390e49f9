//===- DTypes.cpp - Element types of the kernel ABI -------------*- C++ -*-===//
//
// The element-type functions of Common.h's C ABI: bytes per element and the
// name the metadata spells, both from DTypes.def.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Common.h"

extern "C" size_t gpipe_rt_dtype_size(gpipe_rt_dtype dtype) {
  return gpipe::rt::dtypeSize(dtype);
}

extern "C" const char *gpipe_rt_dtype_name(gpipe_rt_dtype dtype) {
  return gpipe::rt::dtypeName(dtype);
}
