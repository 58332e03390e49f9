//===- PassOptions.h - Enum-typed options of the gpipe passes ---*- C++ -*-===//
//
// The values of the gpipe passes' enum-typed options, declared once: the
// schedule family and the re-materialization policy (the dialect's own
// ScheduleKind and Remat enums), the cost model's device profile and the
// optimizer whose state the memory plan reserves (the runtime vocabulary's
// OptimizerKind), and how a schedule import treats transfers. The passes'
// options (Passes.td), the gpipe-pipeline options and gpipe-compile's flags all
// take these lists; the option parser rejects any other value naming the valid
// ones (gpipe/Support/EnumOption.h).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSOPTIONS_H
#define GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSOPTIONS_H

#include "gpipe/Analysis/CostModel.h"
#include "gpipe/Analysis/MemoryPlan.h"
#include "gpipe/Dialect/GPipe/IR/GPipeAttrs.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Support/EnumOption.h"

GPIPE_ENUM_OPTION_PARSER(::mlir::gpipe::ScheduleKind)
GPIPE_ENUM_OPTION_PARSER(::mlir::gpipe::Remat)
GPIPE_ENUM_OPTION_PARSER(::mlir::gpipe::ProfileKind)
GPIPE_ENUM_OPTION_PARSER(::gpipe::abi::OptimizerKind)
GPIPE_ENUM_OPTION_PARSER(::mlir::gpipe::CommunicationMode)
GPIPE_ENUM_OPTION_PARSER(::mlir::gpipe::GemmKind)

namespace mlir::gpipe {

/// The schedules gpipe-schedule generates: gpipe, 1f1b (`custom` is only
/// what an imported schedule records).
inline llvm::cl::ValuesClass getScheduleKindValues() {
  return llvm::cl::ValuesClass({
#define GPIPE_SCHEDULE_FAMILY(kind, name, help)                                \
  clEnumValN(ScheduleKind::kind, name, help),
#include "gpipe/Analysis/ScheduleFamilies.def"
  });
}

/// stage, none, selective, auto.
inline llvm::cl::ValuesClass getRematValues() {
  return llvm::cl::values(
      clEnumValN(Remat::Stage, "stage",
                 "keep each stage's input, recompute the forward in backward"),
      clEnumValN(Remat::None, "none",
                 "keep what the backward reads from the forward"),
      clEnumValN(Remat::Selective, "selective",
                 "keep what the backward reads except in the "
                 "--recompute-layers, which it recomputes"),
      clEnumValN(Remat::Auto, "auto",
                 "selective, the layers to recompute chosen to fit "
                 "--memory-budget at the least recompute time "
                 "(gpipe-compile)"));
}

/// cpu, h200, h200-bf16.
inline llvm::cl::ValuesClass getProfileKindValues() {
  return llvm::cl::values(
      clEnumValN(ProfileKind::CPU, "cpu", "a 2-core x86 CPU with OpenBLAS"),
      clEnumValN(ProfileKind::H200, "h200", "one NVIDIA H200 per stage"),
      clEnumValN(ProfileKind::H200BF16, "h200-bf16",
                 "the H200 with bf16 GEMMs on the tensor cores"));
}

/// sgd, momentum (also sgd-momentum), adam (also adamw):
/// gpipe/Runtime/Optimizers.def.
inline llvm::cl::ValuesClass getOptimizerKindValues() {
  return llvm::cl::ValuesClass({
#define GPIPE_OPTIMIZER(kind, name, stateFactor, help)                         \
  clEnumValN(OptimizerKind::kind, name, help),
#define GPIPE_OPTIMIZER_ALIAS(kind, alias, help)                               \
  clEnumValN(OptimizerKind::kind, alias, help),
#include "gpipe/Runtime/Optimizers.def"
  });
}

/// auto, keep, insert (gpipe-import-schedule).
inline llvm::cl::ValuesClass getCommunicationModeValues() {
  return llvm::cl::values(
      clEnumValN(CommunicationMode::Auto, "auto",
                 "place sends and receives when the CSV has none"),
      clEnumValN(CommunicationMode::Keep, "keep",
                 "import the cells as they are"),
      clEnumValN(CommunicationMode::Insert, "insert",
                 "always place sends and receives anew"));
}

/// auto, openblas, libxsmm.
inline llvm::cl::ValuesClass getGemmKindValues() {
  return llvm::cl::values(
      clEnumValN(GemmKind::Auto, "auto",
                 "per shape, from the machine profile's rates"),
      clEnumValN(GemmKind::OpenBLAS, "openblas", "OpenBLAS for every GEMM"),
      clEnumValN(GemmKind::Libxsmm, "libxsmm", "libxsmm for every GEMM"));
}

} // namespace mlir::gpipe

#endif // GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSOPTIONS_H
