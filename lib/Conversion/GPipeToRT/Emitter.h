//===- Emitter.h - The lowering to gpipe_rt, shared by its parts -*- C++
//-*-===//
//
// `convert-gpipe-to-rt`, split by responsibility over the files of this
// folder:
//
//   Emitter.cpp         the stages' parameter layout, the order of the work
//   StageFunctions.cpp  the conversion patterns of the stage functions:
//                       each is cloned to a func.func on addresses, whose
//                       nn ops become gpipe_rt.kernel calls at its frame's
//                       offsets (layers and recomputations inlined, views
//                       aliased, parameters and constants addressed)
//   FusedLoops.cpp      each nn.fused in them -> scf loops of arith, math
//                       and vector ops
//   RankPrograms.cpp    the conversion patterns of the programs: each
//                       gpipe.program -> gpipe_model_rank_<r>, each
//                       gpipe.for -> scf.for, each action -> runtime calls
//                       on its arena's slots
//   Metadata.cpp        what the runtime must know (schedule, plan, data),
//                       as the module's `gpipe.model` attribute; the JSON
//                       text is written at translation (lib/Target)
//   GPipeToRT.cpp       the pass
//
// Everything placed comes from the IR: the memory plan's typed attributes,
// the programs, the stage functions' frames.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_LIB_CONVERSION_GPIPETORT_EMITTER_H
#define GPIPE_LIB_CONVERSION_GPIPETORT_EMITTER_H

#include "gpipe/Analysis/Timeline.h"
#include "gpipe/Conversion/PassOptions.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/StageBuffers.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/NN/IR/NNElementsBytes.h"
#include "gpipe/Dialect/NN/IR/NNLayerLoc.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"
#include "gpipe/Dialect/RT/IR/RTOps.h"
#include "gpipe/Runtime/Program.h"
#include "gpipe/Runtime/Vocabulary.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
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

/// `base + bytes`: `base` itself when `bytes` is 0.
inline Value offsetAddress(OpBuilder &at, Location loc, Value base,
                           int64_t bytes) {
  return at.createOrFold<gpipe_rt::OffsetOp>(loc, base, Value(), bytes);
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

/// What the stage-function patterns (StageFunctions.cpp) need to know of
/// one function beyond its ops' own attributes, computed before the
/// conversion from the function as planned.
struct StageFunctionInfo {
  StageFunctionKind kind = StageFunctionKind::Forward;
  int64_t stage = 0;
  /// The pipeline's last stage.
  bool last = false;
  /// The function as the memory plan saw it (messages, sites).
  StringRef sourceName;
  unsigned numArgs = 0, numResults = 0;
  /// A backward's input gradients (returned first) and handed-over values.
  unsigned numInputGrads = 0, numDeferred = 0;
  /// The parameters whose gradients a backward returns after them.
  ArrayAttr paramGrads;
  /// Result index -> its byte offset in the rank's gradients, for the
  /// weight gradients a GEMM accumulates in place.
  llvm::SmallDenseMap<unsigned, int64_t> accumulatedAt;
  llvm::SmallPtrSet<Operation *, 8> accumulatingGemms;
  /// Per program point: its top-level layer (sites name it), and the
  /// gpipe_rt.layer mark that goes before it where the layer changes.
  llvm::DenseMap<Operation *, StringAttr> layerOf;
  llvm::DenseMap<Operation *, int64_t> layerMarks;
  /// Per result: computed in its result buffer (no copy at the return).
  SmallVector<bool> resultInPlace;
};

/// A lowered stage function.
struct LoweredFunction {
  func::FuncOp func;
  func::FuncOp source;
  StageFunctionBuffers buffers;
  unsigned numArgs = 0;
  unsigned numResults = 0;
};

class Emitter {
public:
  /// Sets the GEMM choice the metadata records (CPU target).
  void setGemmChoice(GemmChoice choice) { gemmChoice = std::move(choice); }
  Emitter(ModuleOp module, PipelineOp pipeline,
          const PipelineSchedule &schedule, StringRef source, TargetKind target,
          PrecisionKind precision, bool evaluation = false)
      : pipeline(pipeline), converted(schedule), module(module),
        memory(pipeline.getMemoryPlanAttr()), source(source), target(target),
        precision(precision), evaluation(evaluation), ctx(module.getContext()) {
    ptrTy = LLVM::LLVMPointerType::get(ctx);
    i8Ty = IntegerType::get(ctx, 8);
    i32Ty = IntegerType::get(ctx, 32);
    i64Ty = IntegerType::get(ctx, 64);
    f32Ty = Float32Type::get(ctx);
  }

  /// The entry point of rank `rank`'s program: gpipe_model_rank_<r>, or
  /// gpipe_model_eval_rank_<r> for evaluation programs.
  std::string getRankSymbol(int64_t rank) const {
    return (evaluation ? "gpipe_model_eval_rank_" : "gpipe_model_rank_") +
           std::to_string(rank);
  }

  /// Emits the stage functions, the metadata and the accessors at the end
  /// of the module, then converts the programs (the nn/gpipe ops are erased
  /// by the caller afterwards).
  LogicalResult run();

  // What the programs' conversion patterns (RankPrograms.cpp) read.
  PipelineOp pipeline;
  const PipelineSchedule &converted;
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

  // What the stage functions' conversion patterns (StageFunctions.cpp)
  // read and call.
  /// The clones being converted -> what their patterns need.
  llvm::DenseMap<Operation *, StageFunctionInfo> stageInfos;
  const StageParams &getStageParams(int64_t stage) const {
    return stageParams[stage];
  }
  TargetKind getTarget() const { return target; }
  StringRef getTargetName() const { return gpipe::getTargetName(target); }
  bool isBF16() const { return precision == PrecisionKind::BF16; }
  /// Records a kernel call site (what a failure reports); returns its
  /// index.
  int64_t newSite(llvm::json::Object info) {
    sites.push_back(std::move(info));
    return int64_t(sites.size() - 1);
  }
  /// `gpipe_rt.kernel` `kernel`(args), then a check of its status at
  /// `site`.
  void emitKernel(OpBuilder &at, Location loc, StringRef kernel,
                  ValueRange args, int64_t site, Value rank);
  /// Emits `fused` at `at` as a loop over its results (whose buffers, like
  /// its inputs', `addressOf` gives); continues after it.
  LogicalResult emitFusedLoop(OpBuilder &at, nn::FusedOp fused,
                              llvm::function_ref<Value(Value)> addressOf);
  /// Emits gpipe_rt.report_output(rank, mb, value, bytes) of `value` (the
  /// last stage's prediction) at `at`, returning the callback's status
  /// from the function when it fails.
  void emitReportOutput(OpBuilder &at, Location loc, Value rank, Value mb,
                        Value value, int64_t bytes);
  Value constI32(OpBuilder &at, Location loc, int64_t v) {
    return arith::ConstantIntOp::create(at, loc, v, 32);
  }
  Value constI64(OpBuilder &at, Location loc, int64_t v) {
    return arith::ConstantIntOp::create(at, loc, v, 64);
  }
  Value offsetPtr(OpBuilder &at, Location loc, Value base, int64_t offset) {
    return offsetAddress(at, loc, base, offset);
  }

private:
  LogicalResult collectParams();
  /// Checks `func` against its frame, clones it to `__gpipe_<name>` and
  /// records what its conversion needs; convertStageFunctions converts it.
  FailureOr<LoweredFunction>
  lowerStageFunction(func::FuncOp func, StageFunctionKind kind, int64_t stage);
  /// Converts every clone lowerStageFunction made with StageFunctions.cpp's
  /// patterns.
  LogicalResult convertStageFunctions();
  /// Converts every program with RankPrograms.cpp's patterns.
  LogicalResult lowerPrograms();
  llvm::json::Array describeActions(Block &block);
  /// The `gpipe.model` attribute (what the runtime must know, written as
  /// JSON at translation) and the exported accessors; one function per
  /// part of it below.
  LogicalResult emitMetadata();
  void describeRun(llvm::json::Object &root);
  LogicalResult describeInput(llvm::json::Object &root);
  LogicalResult describeTargets(llvm::json::Object &root);
  void describeDataHint(llvm::json::Object &root);
  llvm::json::Object describePrediction();
  LogicalResult describeParameters(llvm::json::Object &root, std::string &data);
  llvm::json::Array describeStages();
  llvm::json::Array describeRanks();
  void emitAccessors(StringRef data);
  SmallVector<int64_t> getBatchShape(Type type);
  /// The type of the last stage's prediction for one micro-batch: the
  /// forward-only pipeline's output, or the logits (prediction) its loss
  /// reads in training; none when the loss reads no tensor.
  std::optional<Type> getPredictionType(func::FuncOp lastForward);

  ModuleOp module;
  /// What the memory plan assumed (optimizer, alignment); every program
  /// carries its own arena.
  MemoryPlanAttr memory;
  std::string source;
  /// The kernel library the calls go to (same signatures, data pointers on
  /// that device).
  TargetKind target;
  /// Which GEMM kernels the calls go to.
  PrecisionKind precision;
  /// The CPU GEMMs' implementations per shape (the metadata's `gemm`);
  /// unset for another target.
  std::optional<GemmChoice> gemmChoice;
  /// The evaluation programs of a training library (ConvertGPipeToRTPass's
  /// `evaluation`).
  bool evaluation;
  MLIRContext *ctx;
  Type ptrTy, i8Ty, i32Ty, i64Ty, f32Ty;

  llvm::json::Array sites;
  /// How many nn.fused loops were outlined (`__gpipe_fused_<n>`).
  int64_t fusedLoops = 0;
  /// Each top-level layer's index among the model's layers (stage order),
  /// what the stage functions' gpipe_rt.layer marks name.
  llvm::DenseMap<StringAttr, int64_t> layerIndex;
};

/// Adds the patterns that convert the programs of `emitter`'s pipeline
/// (RankPrograms.cpp).
void populateProgramConversionPatterns(Emitter &emitter,
                                       RewritePatternSet &patterns);

} // namespace mlir::gpipe::lowering

#endif // GPIPE_LIB_CONVERSION_GPIPETORT_EMITTER_H
