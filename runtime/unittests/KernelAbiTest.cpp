//===- KernelAbiTest.cpp - Every declared kernel is defined -----*- C++ -*-===//
//
// The backends' implementations are compiled against the prototypes that
// Kernels.def generates, so a definition whose parameters differ from its
// declaration does not compile (a conflicting declaration of a C function).
// This test closes the other gap: it takes the address of every kernel the
// .def declares, converted to the function type the .def spells, so a
// kernel left undefined fails to link, and checks that the compiler's
// signature table (KernelSignatures.h) lists the same kernels with the same
// arity. Built into the CPU test binary and, with GPIPE_TEST_CUDA_KERNELS,
// into the CUDA one for the `gpipe_rt_cuda_*` kernels.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/KernelSignatures.h"
#ifdef GPIPE_TEST_CUDA_KERNELS
#include "gpipe/Runtime/CUDAKernels.h"
#else
#include "gpipe/Runtime/CPUKernels.h"
#endif

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace {

using namespace gpipe::abi;

template <typename R, typename... A> constexpr size_t arityOf(R (*)(A...)) {
  return sizeof...(A);
}

struct Defined {
  std::string name;
  const void *address;
  size_t arity;
  bool deviceOnly;
};

#define GPIPE_RT_ARG(role, type, name) type
#define GPIPE_RT_ENTRY(prefix, name, ret, args, deviceOnly)                    \
  Defined{                                                                     \
      #name,                                                                   \
      reinterpret_cast<const void *>(static_cast<ret(*) args>(&prefix##name)), \
      arityOf(static_cast<ret(*) args>(&prefix##name)), deviceOnly},

#ifdef GPIPE_TEST_CUDA_KERNELS
const std::vector<Defined> &definedKernels() {
  static const std::vector<Defined> kernels = {
#define GPIPE_RT_KERNEL(name, ret, args)                                       \
  GPIPE_RT_ENTRY(gpipe_rt_cuda_, name, ret, args, false)
#define GPIPE_RT_DEVICE_KERNEL(name, ret, args)                                \
  GPIPE_RT_ENTRY(gpipe_rt_cuda_, name, ret, args, true)
#include "gpipe/Runtime/Kernels.def"
  };
  return kernels;
}
#define BACKEND CUDA
#else
const std::vector<Defined> &definedKernels() {
  static const std::vector<Defined> kernels = {
#define GPIPE_RT_KERNEL(name, ret, args)                                       \
  GPIPE_RT_ENTRY(gpipe_rt_cpu_, name, ret, args, false)
#include "gpipe/Runtime/Kernels.def"
  };
  return kernels;
}
#define BACKEND CPU
#endif

#define GPIPE_TEST_NAME2(backend, name) backend##name
#define GPIPE_TEST_NAME(backend, name) GPIPE_TEST_NAME2(backend, name)

TEST(KernelAbi, GPIPE_TEST_NAME(BACKEND, EveryKernelIsDefinedAndTabled)) {
  size_t common = 0;
  for (const Defined &kernel : definedKernels()) {
    EXPECT_NE(kernel.address, nullptr) << kernel.name;
    if (kernel.deviceOnly)
      continue;
    ASSERT_LT(common, kNumKernels) << kernel.name;
    const KernelSignature &signature =
        getKernelSignature(static_cast<KernelId>(common));
    EXPECT_EQ(kernel.name, signature.name);
    EXPECT_EQ(kernel.arity, signature.numParams) << kernel.name;
    std::optional<KernelId> id = lookupKernel(kernel.name);
    ASSERT_TRUE(id.has_value()) << kernel.name;
    EXPECT_EQ(static_cast<size_t>(*id), common);
    ++common;
  }
  EXPECT_EQ(common, kNumKernels);
}

TEST(KernelAbi, GPIPE_TEST_NAME(BACKEND, RolesFitTheMachineTypes)) {
  for (const KernelSignature &signature : kKernelSignatures)
    for (const KernelParam &param : signature) {
      bool pointer = param.type == ArgType::Ptr;
      bool scalar = isInteger(param.role) || param.role == ArgRole::REAL;
      EXPECT_NE(pointer, scalar) << signature.name << " " << param.name;
    }
}

} // namespace
