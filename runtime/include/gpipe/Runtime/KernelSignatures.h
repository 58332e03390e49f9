//===- KernelSignatures.h - The kernel ABI as data --------------*- C++ -*-===//
//
// Kernels.def expanded into a table: for every kernel all backends have, its
// name and, per argument, its role, the machine type it is passed as and its
// name. The compiler builds its calls against this table (the argument kinds
// a call description may use in each position, the LLVM types of the
// declaration), and checks every call description it makes against it. Each
// entry's C types are checked against its roles here, at compile time, so a
// .def entry that declares, say, a shape as `int64_t *` or a rank as
// `int64_t` does not build.
//
// Header-only C++17 over the C headers: the compiler includes it without
// linking the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_KERNELSIGNATURES_H
#define GPIPE_RUNTIME_KERNELSIGNATURES_H

#include "gpipe/Runtime/Kernels.h"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>
#include <type_traits>

namespace gpipe::abi {

/// The role of one kernel argument (Kernels.def lists them).
enum class ArgRole : uint8_t {
  IN,
  OPT_IN,
  OUT,
  OPT_OUT,
  INOUT,
  OPT_INOUT,
  SHAPE,
  OPT_SHAPE,
  RANK,
  INTS,
  COUNT,
  INT,
  ENUM,
  FLAG,
  REAL,
  IN_LIST,
  OUT_LIST,
  SHAPE_LIST,
};

/// How an argument is passed: a pointer or a scalar of one width.
enum class ArgType : uint8_t { Ptr, I32, I64, F32, F64 };

/// Whether a buffer role may be passed a null pointer.
constexpr bool isOptional(ArgRole role) {
  return role == ArgRole::OPT_IN || role == ArgRole::OPT_OUT ||
         role == ArgRole::OPT_INOUT || role == ArgRole::OPT_SHAPE;
}

/// Whether `role` is tensor data (a buffer the kernel reads or writes).
constexpr bool isBuffer(ArgRole role) {
  return role == ArgRole::IN || role == ArgRole::OPT_IN ||
         role == ArgRole::OUT || role == ArgRole::OPT_OUT ||
         role == ArgRole::INOUT || role == ArgRole::OPT_INOUT;
}

/// Whether `role` is an int64 array (a shape or another one).
constexpr bool isIntArray(ArgRole role) {
  return role == ArgRole::SHAPE || role == ArgRole::OPT_SHAPE ||
         role == ArgRole::INTS;
}

/// Whether `role` is an integer scalar.
constexpr bool isInteger(ArgRole role) {
  return role == ArgRole::RANK || role == ArgRole::COUNT ||
         role == ArgRole::INT || role == ArgRole::ENUM || role == ArgRole::FLAG;
}

/// One argument of a kernel.
struct KernelParam {
  ArgRole role;
  ArgType type;
  const char *name;
};

/// A kernel all backends have: `gpipe_rt_<backend>_<name>`, returning a
/// gpipe_rt_status.
struct KernelSignature {
  const char *name;
  const KernelParam *params;
  size_t numParams;

  const KernelParam *begin() const { return params; }
  const KernelParam *end() const { return params + numParams; }
};

/// Every kernel of Kernels.def that all backends have, in .def order. The
/// enumerators carry a `k_` prefix because kernel names such as `not` are
/// C++ keywords.
enum class KernelId : uint16_t {
#define GPIPE_RT_ARG(role, type, name)
#define GPIPE_RT_KERNEL(name, ret, args) k_##name,
#include "gpipe/Runtime/Kernels.def"
};

namespace detail {

/// One argument's table entry; refuses a C type that does not fit its role.
template <ArgRole Role, typename T>
constexpr KernelParam makeParam(const char *name) {
  using Pointee = std::remove_pointer_t<T>;
  constexpr bool isPointer = std::is_pointer_v<T>;
  if constexpr (isBuffer(Role)) {
    static_assert(isPointer, "a buffer is passed as a pointer");
    static_assert(std::is_const_v<Pointee> ==
                      (Role == ArgRole::IN || Role == ArgRole::OPT_IN),
                  "inputs are pointers to const, outputs are not");
  } else if constexpr (isIntArray(Role)) {
    static_assert(std::is_same_v<T, const int64_t *>,
                  "shapes and int arrays are const int64_t *");
  } else if constexpr (Role == ArgRole::RANK || Role == ArgRole::FLAG) {
    static_assert(std::is_same_v<T, int32_t>, "ranks and flags are int32_t");
  } else if constexpr (Role == ArgRole::COUNT) {
    static_assert(std::is_same_v<T, int64_t>, "counts are int64_t");
  } else if constexpr (Role == ArgRole::ENUM) {
    static_assert(std::is_enum_v<T> && sizeof(T) == 4,
                  "an ENUM is a C enum passed as int32");
  } else if constexpr (Role == ArgRole::INT) {
    static_assert(std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                  "an INT is a 32- or 64-bit integer");
  } else if constexpr (Role == ArgRole::REAL) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                  "a REAL is a float or a double");
  } else if constexpr (Role == ArgRole::IN_LIST) {
    static_assert(std::is_same_v<T, const void *const *>,
                  "an IN_LIST is const void *const *");
  } else if constexpr (Role == ArgRole::OUT_LIST) {
    static_assert(std::is_same_v<T, void *const *>,
                  "an OUT_LIST is void *const *");
  } else if constexpr (Role == ArgRole::SHAPE_LIST) {
    static_assert(std::is_same_v<T, const int64_t *const *>,
                  "a SHAPE_LIST is const int64_t *const *");
  }
  ArgType type = ArgType::Ptr;
  if constexpr (std::is_floating_point_v<T>)
    type = sizeof(T) == 4 ? ArgType::F32 : ArgType::F64;
  else if constexpr (!isPointer)
    type = sizeof(T) == 4 ? ArgType::I32 : ArgType::I64;
  return KernelParam{Role, type, name};
}

#define GPIPE_RT_UNPAREN(...) __VA_ARGS__
#define GPIPE_RT_ARG(role, type, name) makeParam<ArgRole::role, type>(#name)
#define GPIPE_RT_KERNEL(name, ret, args)                                       \
  static_assert(std::is_same_v<ret, gpipe_rt_status>,                          \
                "kernels return a gpipe_rt_status");                           \
  inline constexpr KernelParam name##Params[] = {GPIPE_RT_UNPAREN args};
#include "gpipe/Runtime/Kernels.def"
#undef GPIPE_RT_UNPAREN

} // namespace detail

/// The signatures, indexed by KernelId.
inline constexpr KernelSignature kKernelSignatures[] = {
#define GPIPE_RT_ARG(role, type, name)
#define GPIPE_RT_KERNEL(name, ret, args)                                       \
  {#name, detail::name##Params, std::size(detail::name##Params)},
#include "gpipe/Runtime/Kernels.def"
};

inline constexpr size_t kNumKernels = std::size(kKernelSignatures);

constexpr const KernelSignature &getKernelSignature(KernelId id) {
  return kKernelSignatures[static_cast<size_t>(id)];
}

/// The kernel called `name` ("binary_f32"), if there is one.
constexpr std::optional<KernelId> lookupKernel(std::string_view name) {
  for (size_t i = 0; i < kNumKernels; ++i)
    if (name == kKernelSignatures[i].name)
      return static_cast<KernelId>(i);
  return std::nullopt;
}

} // namespace gpipe::abi

#endif // GPIPE_RUNTIME_KERNELSIGNATURES_H
