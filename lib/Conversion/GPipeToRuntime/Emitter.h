//===- Emitter.h - The lowering's emitter, shared by its parts -*- C++ -*-===//
//
// The emitter of `convert-gpipe-to-runtime`, split by responsibility over
// the files of this folder:
//
//   Emitter.cpp         declarations, read-only globals, checked calls, the
//                       stages' parameter layout, the order of the work
//   StageFunctions.cpp  each stage function -> an internal LLVM function
//                       calling one kernel per op at its frame's offsets
//   FusedLoops.cpp      each nn.fused in them -> a vectorized loop
//   RankPrograms.cpp    each rank's program -> gpipe_model_rank_<r>, its
//                       micro-batch loops kept, buffers at its arena's slots
//   Metadata.cpp        what the runtime must know (schedule, plan, data),
//                       as the module's `gpipe.model` attribute; the JSON
//                       text is written at translation (lib/Target)
//   GPipeToRuntime.cpp  the pass
//
// Everything the emitter places comes from the IR: the memory plan's typed
// attributes, the programs, the stage functions' frames.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_LIB_CONVERSION_GPIPETORUNTIME_EMITTER_H
#define GPIPE_LIB_CONVERSION_GPIPETORUNTIME_EMITTER_H

#include "gpipe/Analysis/Timeline.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/StageBuffers.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/NN/IR/NNElementsBytes.h"
#include "gpipe/Dialect/NN/IR/NNLayerLoc.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"
#include "gpipe/Runtime/Program.h"
#include "gpipe/Runtime/Vocabulary.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>

namespace mlir::gpipe::lowering {

inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}
inline int64_t countOf(Value v) {
  int64_t n = 1;
  for (int64_t d : shapeOf(v))
    n *= d;
  return n;
}

/// The LLVM type a kernel argument is passed as.
inline Type getArgType(MLIRContext *ctx, ::gpipe::abi::ArgType type) {
  switch (type) {
  case ::gpipe::abi::ArgType::Ptr:
    return LLVM::LLVMPointerType::get(ctx);
  case ::gpipe::abi::ArgType::I32:
    return IntegerType::get(ctx, 32);
  case ::gpipe::abi::ArgType::I64:
    return IntegerType::get(ctx, 64);
  case ::gpipe::abi::ArgType::F32:
    return Float32Type::get(ctx);
  case ::gpipe::abi::ArgType::F64:
    return Float64Type::get(ctx);
  }
  return Type();
}

/// The runtime element type of `v`, or an error at `op`.
inline FailureOr<int64_t> dtypeOf(Operation *op, Value v,
                                  ArrayRef<gpipe_rt_dtype> allowed = {}) {
  auto shaped = dyn_cast<ShapedType>(v.getType());
  FailureOr<gpipe_rt_dtype> dtype =
      shaped ? getRuntimeDType(shaped.getElementType())
             : FailureOr<gpipe_rt_dtype>(failure());
  if (failed(dtype) ||
      (!allowed.empty() && !llvm::is_contained(allowed, *dtype)))
    return mlir::emitError(op->getLoc())
               << "'" << op->getName() << "': element type of " << v.getType()
               << " is not supported by the CPU code generator",
           failure();
  return static_cast<int64_t>(*dtype);
}

inline std::string locationString(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  nn::stripLayerLoc(loc).print(os);
  return text;
}

/// A batch norm's running statistics, which the step updates from the
/// accumulated batch sums instead of the optimizer (nn.batch_norm).
struct RunningStats {
  StringRef mean, var;
  int64_t channels = 0;
  /// Values per channel in one micro-batch (N * H * W).
  int64_t countPerMicrobatch = 0;
  double momentum = 0.0;
};

/// Where a stage's parameters live inside its parameter buffer.
struct StageParams {
  /// name -> (byte offset, element count): the trainable parameters in the
  /// forward's read order, then the running statistics (from
  /// `trainableBytes` on, which the optimizer does not touch).
  llvm::MapVector<StringRef, std::pair<int64_t, int64_t>> params;
  int64_t bytes = 0;
  int64_t trainableBytes = 0;
  SmallVector<RunningStats> runningStats;
};

/// A lowered stage function.
struct LoweredFunction {
  LLVM::LLVMFuncOp func;
  func::FuncOp source;
  StageFunctionBuffers buffers;
  unsigned numArgs = 0;
  unsigned numResults = 0;
};

class Emitter {
public:
  Emitter(ModuleOp module, PipelineOp pipeline, PipelineSchedule &schedule,
          StringRef source, StringRef target, StringRef precision)
      : module(module), pipeline(pipeline), converted(schedule),
        memory(pipeline.getMemoryPlanAttr()), source(source), target(target),
        precision(precision), ctx(module.getContext()), b(ctx) {
    ptrTy = LLVM::LLVMPointerType::get(ctx);
    i8Ty = IntegerType::get(ctx, 8);
    i32Ty = IntegerType::get(ctx, 32);
    i64Ty = IntegerType::get(ctx, 64);
    f32Ty = Float32Type::get(ctx);
  }

  /// Emits everything at the end of the module (the nn/gpipe ops are erased
  /// by the caller afterwards).
  LogicalResult run();

private:
  // Declarations and data.
  LLVM::LLVMFuncOp declare(StringRef name, Type result, ArrayRef<Type> args);
  Value bytesGlobal(OpBuilder &at, Location loc, StringRef bytes,
                    StringRef prefix);
  Value intsGlobal(OpBuilder &at, Location loc, ArrayRef<int64_t> ints);
  Value constI32(OpBuilder &at, Location loc, int64_t v) {
    return LLVM::ConstantOp::create(at, loc, i32Ty, at.getI32IntegerAttr(v));
  }
  Value constI64(OpBuilder &at, Location loc, int64_t v) {
    return LLVM::ConstantOp::create(at, loc, i64Ty, at.getI64IntegerAttr(v));
  }
  Value offsetPtr(OpBuilder &at, Location loc, Value base, int64_t offset) {
    if (offset == 0)
      return base;
    Value index = constI64(at, loc, offset);
    return LLVM::GEPOp::create(at, loc, ptrTy, i8Ty, base,
                               ArrayRef<LLVM::GEPArg>{index});
  }

  /// Emits a call returning an i32 status; branches to `failBlock` with the
  /// status (and `site`, when >= 0) when it is nonzero. Continues in a new
  /// block.
  void emitChecked(OpBuilder &at, Location loc, LLVM::LLVMFuncOp callee,
                   ValueRange args, Block *failBlock, int64_t site);

  LogicalResult collectParams();
  /// Emits `fused` at `at` as a loop over its results (whose buffers, like
  /// its inputs', `addressOf` gives); continues after it.
  LogicalResult emitFusedLoop(OpBuilder &at, nn::FusedOp fused,
                              llvm::function_ref<Value(Value)> addressOf);
  FailureOr<LoweredFunction>
  lowerStageFunction(func::FuncOp func, StageFunctionKind kind, int64_t stage);
  /// A micro-batch in generated code: a constant, or a value of a loop.
  struct Microbatch {
    Value value;
    std::optional<int64_t> constant;
  };
  LogicalResult lowerRank(ProgramOp program);
  LogicalResult lowerAction(OpBuilder &at, ProgramOp program,
                            ActionOpInterface action, Microbatch mb,
                            Value index, std::optional<int64_t> constIndex,
                            const std::map<int, int64_t> &firstBackward,
                            Value rank, Value arena, Block *abort);
  llvm::json::Array describeActions(Block &block);
  LogicalResult emitMetadata();
  /// The type of the last stage's prediction for one micro-batch: the
  /// forward-only pipeline's output, or the logits (prediction) its loss
  /// reads in training; none when the loss reads no tensor.
  std::optional<Type> getPredictionType(func::FuncOp lastForward);
  /// Emits gpipe_rt_report_output(rank, mb, value, bytes) of `value` (the
  /// last stage's prediction) at `at`, returning the callback's status
  /// from the function when it fails.
  void emitReportOutput(OpBuilder &at, Location loc, LLVM::LLVMFuncOp func,
                        Value rank, Value mb, Value value, int64_t bytes);

  ModuleOp module;
  PipelineOp pipeline;
  /// The programs expanded (for the metadata's predictions and the rank of
  /// each stage) and the stages in pipeline order.
  PipelineSchedule &converted;
  /// What the memory plan assumed (optimizer, alignment); every program
  /// carries its own arena.
  MemoryPlanAttr memory;
  std::string source;
  /// The kernel library the calls go to: gpipe_rt_<target>_* ("cpu" or
  /// "cuda"; same signatures, data pointers on that device).
  std::string target;
  /// "fp32" or "bf16": which GEMM kernels the calls go to.
  std::string precision;
  MLIRContext *ctx;
  OpBuilder b;
  Type ptrTy, i8Ty, i32Ty, i64Ty, f32Ty;

  llvm::StringMap<LLVM::LLVMFuncOp> declared;
  std::map<std::string, LLVM::GlobalOp> globals;
  int64_t numGlobals = 0;
  llvm::json::Array sites;
  /// Each top-level layer's index among the model's layers (stage order),
  /// what the stage functions' gpipe_rt_layer marks name.
  llvm::DenseMap<StringAttr, int64_t> layerIndex;

  SmallVector<StageParams> stageParams;
  SmallVector<LoweredFunction> forwards, backwards;
  /// Per stage: the two halves of its split backward (none without).
  SmallVector<std::optional<LoweredFunction>> inputHalves, weightHalves;
  /// Per stage with a split backward: the offsets of the values its input
  /// half hands to its weight half in the Deferred buffer.
  SmallVector<SmallVector<int64_t>> deferredOffsets;
  /// Per stage: the saved values' offsets in the Saved buffer (remat none),
  /// one per saved result of the forward; and the extra inputs' offsets.
  SmallVector<SmallVector<int64_t>> savedOffsets, extraOffsets;
  SmallVector<unsigned> numSaved;
};

} // namespace mlir::gpipe::lowering

#endif // GPIPE_LIB_CONVERSION_GPIPETORUNTIME_EMITTER_H
