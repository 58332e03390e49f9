//===- PassOptions.h - Enum-typed options of the conversions ----*- C++ -*-===//
//
// What convert-gpipe-to-rt generates code for, as enums with their
// option values declared once: the kernel library the calls go to (target)
// and the GEMM arithmetic (precision). The pass's options (Passes.td), the
// compile pipeline's options and gpipe-compile's flags all take these lists;
// the option parser rejects any other value naming the valid ones
// (gpipe/Support/EnumOption.h).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_CONVERSION_PASSOPTIONS_H
#define GPIPE_CONVERSION_PASSOPTIONS_H

#include "gpipe/Dialect/GPipe/Transforms/PassOptions.h"
#include "gpipe/Support/EnumOption.h"

namespace mlir::gpipe {

/// The kernel library the generated code calls (same signatures, data
/// pointers on that device).
enum class TargetKind {
  CPU,  ///< "cpu": gpipe_rt_cpu_*
  CUDA, ///< "cuda": gpipe_rt_cuda_*
};

/// How GEMMs compute; every other op, the parameters and the gradients stay
/// fp32.
enum class PrecisionKind {
  FP32, ///< "fp32"
  BF16, ///< "bf16": bf16 operands, fp32 accumulation
};

/// "cpu", "cuda": the kernel prefix and the metadata's `target`.
inline const char *getTargetName(TargetKind kind) {
  return kind == TargetKind::CUDA ? "cuda" : "cpu";
}
/// "fp32", "bf16": the metadata's `precision`.
inline const char *getPrecisionName(PrecisionKind kind) {
  return kind == PrecisionKind::BF16 ? "bf16" : "fp32";
}

} // namespace mlir::gpipe

GPIPE_ENUM_OPTION_PARSER(::mlir::gpipe::TargetKind)
GPIPE_ENUM_OPTION_PARSER(::mlir::gpipe::PrecisionKind)

namespace mlir::gpipe {

/// cpu, cuda.
inline llvm::cl::ValuesClass getTargetKindValues() {
  return llvm::cl::values(
      clEnumValN(TargetKind::CPU, "cpu", "the CPU kernels (OpenBLAS)"),
      clEnumValN(TargetKind::CUDA, "cuda", "the CUDA kernels (cuBLAS)"));
}

/// fp32, bf16.
inline llvm::cl::ValuesClass getPrecisionKindValues() {
  return llvm::cl::values(clEnumValN(PrecisionKind::FP32, "fp32", "fp32 GEMMs"),
                          clEnumValN(PrecisionKind::BF16, "bf16",
                                     "bf16 GEMM operands, fp32 accumulation"));
}

} // namespace mlir::gpipe

#endif // GPIPE_CONVERSION_PASSOPTIONS_H
