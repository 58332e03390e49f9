//===- PipelineExecutor.cpp - Reference executor for gpipe pipelines ------===//
//
// Implements executePipeline: reads the stages of a scheduled gpipe.pipeline
// (forward and backward functions, the parameters each backward
// differentiates, which rank runs which stage), splits the mini-batch into
// micro-batches, then simulates every rank's program in one thread in a
// fixed global order with mailbox transfers, interpreting the stage functions
// and accumulating parameter gradients in micro-batch order.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Interpreter/PipelineExecutor.h"

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Vocabulary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::gpipe;

/// The number of values `forward` saves for its backward (its last results;
/// remat none), 0 when the backward recomputes.
static unsigned getSavedCount(func::FuncOp forward) {
  auto count = forward->getAttrOfType<IntegerAttr>(nn::kSavedCountAttrName);
  return count ? static_cast<unsigned>(count.getInt()) : 0;
}

namespace {

/// How a stage's backward-like function returns its gradients: the result
/// holding the gradient of the stage input (argument 0), if any, and the
/// parameters of the trailing results, in order.
struct GradientLayout {
  int64_t inputGradResult = -1;
  unsigned firstParamResult = 0;
  SmallVector<std::string> params;
};

/// A stage as the executor runs it.
struct Stage {
  StageOp op;
  int64_t index = 0;
  /// The rank whose program names the stage (-1: none does).
  int64_t rank = -1;
  func::FuncOp forward, backward, backwardInput, backwardWeight;
  GradientLayout backwardLayout, inputLayout, weightLayout;
  /// The parameters the stage differentiates (its backward's, or the weight
  /// half's).
  SmallVector<std::string> params;
};

/// Per (stage, micro-batch) state.
struct Slot {
  /// The stage's input activation (stage 0: the micro-batch's data).
  HostTensor input;
  /// The forward's first result: the activation for the next stage, or the
  /// loss on the last.
  HostTensor output;
  /// The gradient of `output` (received or handed over on the same rank).
  HostTensor outputGrad;
  /// The gradient of `input` from the backward (or its input half).
  HostTensor inputGrad;
  /// remat none: the forward's saved results (`nn.saved_count`), kept for the
  /// backward.
  SmallVector<HostTensor> saved;
  /// A split backward: what its input half hands to its weight half
  /// (`nn.deferred_count`), kept from I to W.
  SmallVector<HostTensor> deferred;
  bool forwardDone = false;
  bool backwardDone = false;
  bool inputGradDone = false;
};

/// A message in flight: (boundary, micro-batch, forward?) -> payload. The
/// boundary b sits between stages b and b + 1.
using MailboxKey = std::tuple<int64_t, int64_t, bool>;

struct Message {
  HostTensor payload;
  int64_t fromRank;
};

enum class Outcome { Ran, Blocked, Failed };

class Executor {
public:
  Executor(ModuleOp module, ParameterStore &params,
           const PipelineExecutorOptions &options)
      : module(module), params(params), options(options) {}

  FailureOr<PipelineStepResult> run(const HostTensor &input,
                                    const HostTensor &labels);

private:
  LogicalResult findPipeline();
  LogicalResult readStages();
  FailureOr<GradientLayout> readLayout(func::FuncOp func, Operation *user,
                                       bool needsParams);
  LogicalResult splitBatch(const HostTensor &input, const HostTensor &labels);

  Outcome step(int64_t rank, int64_t position, Operation *op, int64_t mb);
  Outcome runForward(Operation *op, Stage &stage, int64_t mb);
  Outcome runBackward(Operation *op, Stage &stage, int64_t mb, ActionKind kind);
  Outcome runSend(SendOp send, Stage &stage, int64_t rank, int64_t mb);
  Outcome runRecv(RecvOp recv, Stage &stage, int64_t rank, int64_t mb);
  Outcome runStep(Operation *op, Stage &stage);

  /// The arguments of the stage's forward for micro-batch `mb` (its input
  /// must be known).
  SmallVector<HostTensor> forwardArgs(Stage &stage, int64_t mb);
  /// Adds the gradients of `results` (laid out by `layout`) to the stage's
  /// accumulators for micro-batch `mb`, checking the micro-batch order;
  /// those `inPlace` lists were added by their GEMMs already.
  LogicalResult accumulate(Operation *op, Stage &stage, int64_t mb,
                           const GradientLayout &layout,
                           ArrayRef<HostTensor> results,
                           const GradientAccumulation &inPlace);

  /// An error at `op` naming the action: "rank R action I (text): ...".
  InFlightDiagnostic actionError(Operation *op);

  /// The random key of micro-batch `mb` (one replica: its index is `mb`).
  uint64_t rngKey(int64_t mb) const {
    return ::gpipe::abi::getRngKey(options.seed, options.step, mb);
  }

  ModuleOp module;
  ParameterStore &params;
  const PipelineExecutorOptions &options;
  PipelineOp pipeline;
  int64_t numMicrobatches = 0;
  std::vector<Stage> stages;
  llvm::DenseMap<Attribute, int64_t> stageIndex;
  /// slots[stage][mb].
  std::vector<std::vector<Slot>> slots;
  /// The labels of each micro-batch (invalid when none were given).
  std::vector<HostTensor> labelSlices;
  std::map<MailboxKey, Message> mailbox;
  /// Accumulated gradients by parameter, and the next micro-batch each
  /// stage's weight gradients must come from.
  std::map<std::string, HostTensor> gradients;
  std::vector<int64_t> nextWeightMb;
  std::vector<bool> stepped;
  /// The action being run, for messages.
  int64_t currentRank = 0, currentPosition = 0, currentMb = -1;
};

} // namespace

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static std::string describe(Operation *op, int64_t mb = -1) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.skipRegions();
  op->print(os, flags);
  // An action in a loop prints its loop variable: say which micro-batch.
  auto action = dyn_cast<ActionOpInterface>(op);
  if (action && action.getMicrobatchBase())
    os << " at mb " << mb;
  return text;
}

static HostTensor copyOf(const HostTensor &t) {
  HostTensor copy(t.getDType(), t.getShape());
  if (t.getByteSize() > 0)
    std::memcpy(copy.getMutableData(), t.getData(), t.getByteSize());
  return copy;
}

/// Rows [begin, begin + count) of dim 0 of `t`.
static HostTensor sliceRows(const HostTensor &t, int64_t begin, int64_t count) {
  SmallVector<int64_t> shape(t.getShape());
  int64_t rows = shape[0];
  shape[0] = count;
  HostTensor slice(t.getDType(), shape);
  size_t rowBytes = rows ? t.getByteSize() / size_t(rows) : 0;
  if (slice.getByteSize() > 0)
    std::memcpy(slice.getMutableData(),
                static_cast<const char *>(t.getData()) +
                    size_t(begin) * rowBytes,
                slice.getByteSize());
  return slice;
}

InFlightDiagnostic Executor::actionError(Operation *op) {
  return mlir::emitError(op->getLoc())
         << "rank " << currentRank << " action " << currentPosition << " ("
         << describe(op, currentMb) << "): ";
}

//===----------------------------------------------------------------------===//
// Setup
//===----------------------------------------------------------------------===//

LogicalResult Executor::findPipeline() {
  SmallVector<PipelineOp> candidates;
  for (auto p : module.getOps<PipelineOp>())
    if (options.pipeline.empty() || p.getSymName() == options.pipeline)
      candidates.push_back(p);
  if (candidates.size() != 1) {
    InFlightDiagnostic diag = mlir::emitError(module.getLoc());
    if (options.pipeline.empty())
      diag << "expected exactly one gpipe.pipeline, found "
           << candidates.size();
    else
      diag << "no gpipe.pipeline @" << options.pipeline;
    return diag;
  }
  pipeline = candidates.front();
  if (!pipeline.isScheduled())
    return emitPipelineError(pipeline)
           << "has no programs (run gpipe-schedule first)";
  if (pipeline.getNumReplicas() > 1)
    return emitPipelineError(pipeline)
           << "has data_parallel " << pipeline.getNumReplicas()
           << "; the reference executor runs one replica (its data-parallel "
              "equivalent is the same pipeline with "
           << pipeline.getNumMicrobatches() * pipeline.getNumReplicas()
           << " micro-batches)";
  // The executor checks a training step (gradients and updates); an
  // inference pipeline's forwards are the network function's on each
  // micro-batch, which the nn interpreter runs.
  if (pipeline.isForwardOnly())
    return emitPipelineError(pipeline)
           << "is forward_only; the reference executor runs training steps "
              "(interpret the network function for its outputs)";
  numMicrobatches = pipeline.getNumMicrobatches();
  if (numMicrobatches < 1)
    return emitPipelineError(pipeline)
           << "has " << numMicrobatches << " micro-batches";
  return success();
}

FailureOr<GradientLayout>
Executor::readLayout(func::FuncOp func, Operation *user, bool needsParams) {
  GradientLayout layout;
  auto inputs = func->getAttrOfType<DenseI64ArrayAttr>(nn::kInputGradsAttrName);
  auto names = func->getAttrOfType<ArrayAttr>(nn::kParamGradsAttrName);
  unsigned numResults = func.getFunctionType().getNumResults();
  if (!names) {
    if (needsParams)
      return mlir::emitError(func.getLoc())
             << "@" << func.getSymName() << " (used by " << describe(user)
             << ") lacks '" << nn::kParamGradsAttrName
             << "': the executor cannot tell which results are parameter "
                "gradients";
    // An input half: its input gradients, then what it hands over.
    layout.firstParamResult = numResults;
    if (inputs) {
      for (auto [i, position] : llvm::enumerate(inputs.asArrayRef()))
        if (position == 0)
          layout.inputGradResult = int64_t(i);
    } else {
      layout.inputGradResult = numResults > 0 ? 0 : -1;
    }
    return layout;
  }
  for (Attribute a : names) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(a);
    if (!ref)
      return mlir::emitError(func.getLoc())
             << "@" << func.getSymName() << ": '" << nn::kParamGradsAttrName
             << "' must hold symbol references";
    layout.params.push_back(ref.getValue().str());
  }
  if (layout.params.size() > numResults)
    return mlir::emitError(func.getLoc())
           << "@" << func.getSymName() << " names " << layout.params.size()
           << " parameter gradients but has " << numResults << " results";
  layout.firstParamResult = numResults - unsigned(layout.params.size());
  if (inputs) {
    for (auto [i, position] : llvm::enumerate(inputs.asArrayRef()))
      if (position == 0 && i < layout.firstParamResult)
        layout.inputGradResult = int64_t(i);
  } else if (layout.firstParamResult > 0) {
    layout.inputGradResult = 0;
  }
  for (const std::string &name : layout.params) {
    const HostTensor *value = params.lookup(name);
    if (!value)
      return mlir::emitError(func.getLoc())
             << "@" << func.getSymName() << " differentiates parameter @"
             << name << ", which the parameter store lacks";
  }
  return layout;
}

LogicalResult Executor::readStages() {
  SymbolTableCollection symbols;
  FailureOr<SmallVector<StageOp>> ops = lookupStages(pipeline, &symbols);
  if (failed(ops))
    return failure();
  llvm::StringMap<int64_t> paramOwner;
  for (auto [k, op] : llvm::enumerate(*ops)) {
    Stage stage;
    stage.op = op;
    stage.index = int64_t(k);
    stageIndex[FlatSymbolRefAttr::get(op.getSymNameAttr())] = int64_t(k);
    auto lookup = [&](FlatSymbolRefAttr ref) -> func::FuncOp {
      if (!ref)
        return {};
      return symbols.lookupNearestSymbolFrom<func::FuncOp>(op, ref);
    };
    stage.forward = lookup(op.getForwardAttr());
    stage.backward = lookup(op.getBackwardAttr());
    stage.backwardInput = lookup(op.getBackwardInputAttr());
    stage.backwardWeight = lookup(op.getBackwardWeightAttr());
    if (!stage.forward || !stage.backward ||
        (op.getBackwardInputAttr() && !stage.backwardInput) ||
        (op.getBackwardWeightAttr() && !stage.backwardWeight))
      return op.emitOpError("names a function that does not exist");
    FailureOr<GradientLayout> layout =
        readLayout(stage.backward, op, /*needsParams=*/true);
    if (failed(layout))
      return failure();
    stage.backwardLayout = *layout;
    stage.params = layout->params;
    if (stage.backwardInput) {
      FailureOr<GradientLayout> in =
          readLayout(stage.backwardInput, op, /*needsParams=*/false);
      FailureOr<GradientLayout> w =
          readLayout(stage.backwardWeight, op, /*needsParams=*/true);
      if (failed(in) || failed(w))
        return failure();
      stage.inputLayout = *in;
      stage.weightLayout = *w;
    }
    for (const std::string &name : stage.params) {
      auto [it, inserted] = paramOwner.try_emplace(name, int64_t(k));
      if (!inserted && it->second != int64_t(k))
        return op.emitOpError("differentiates parameter @")
               << name << ", which stage " << it->second
               << " differentiates too; tied weights across stages are not "
                  "supported";
    }
    stages.push_back(std::move(stage));
  }
  if (stages.empty())
    return emitPipelineError(pipeline) << "has no stages";
  // Its gradients and updates are per parameter name; a tied parameter's
  // copies would each get their own.
  for (auto param :
       pipeline->getParentOfType<ModuleOp>().getOps<nn::ParameterOp>())
    if (FlatSymbolRefAttr first = param.getTiedToAttr())
      return emitPipelineError(pipeline)
             << "reads @" << param.getSymName()
             << ", a copy of tied parameter @" << first.getValue()
             << "; the reference executor does not sum tied copies' "
                "gradients (compile the model and train it with gpipe-run)";
  if (std::optional<double> clip = pipeline.getClipBound())
    return emitPipelineError(pipeline)
           << "has clip_grad_norm " << *clip
           << "; the reference executor does not clip gradients (compile the "
              "model and train it with gpipe-run)";
  // Which rank runs each stage.
  for (ProgramOp program : pipeline.getPrograms()) {
    SmallVector<ActionOpInterface> actions;
    walkProgram(program, [&](ActionOpInterface action, int64_t) {
      actions.push_back(action);
    });
    for (ActionOpInterface action : actions) {
      auto it = stageIndex.find(action.getStageSymbol());
      if (it == stageIndex.end())
        return action->emitOpError("names a stage the pipeline lacks");
      Stage &stage = stages[size_t(it->second)];
      if (stage.rank >= 0 && stage.rank != program.getRankIndex())
        return action->emitOpError("runs stage ")
               << action.getStageSymbol() << " on rank "
               << program.getRankIndex() << ", but rank " << stage.rank
               << " runs it too";
      stage.rank = program.getRankIndex();
    }
  }
  for (Stage &stage : stages)
    if (stage.rank < 0)
      return emitPipelineError(pipeline)
             << "stage @" << stage.op.getSymName() << " runs on no rank";
  return success();
}

LogicalResult Executor::splitBatch(const HostTensor &input,
                                   const HostTensor &labels) {
  MLIRContext *ctx = module.getContext();
  int64_t m = numMicrobatches;
  auto splitCheck = [&](const HostTensor &t, Type want,
                        StringRef what) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(want);
    if (!t.isValid())
      return emitPipelineError(pipeline)
             << "needs " << what << " of type " << want << " per micro-batch";
    bool ok = type && type.getRank() >= 1 && t.getRank() == type.getRank() &&
              t.getShape()[0] == type.getShape()[0] * m &&
              t.getShape().drop_front() == type.getShape().drop_front() &&
              t.getType(ctx).getElementType() == type.getElementType();
    if (!ok)
      return emitPipelineError(pipeline)
             << what << " " << t.getTypeString() << " does not split into " << m
             << " micro-batches of " << want;
    return success();
  };
  Stage &first = stages.front();
  Stage &last = stages.back();
  FunctionType firstType = first.forward.getFunctionType();
  FunctionType lastType = last.forward.getFunctionType();
  if (firstType.getNumInputs() < 1)
    return first.forward.emitError("stage forward takes no input");
  for (Stage &stage : stages) {
    unsigned extras = stage.forward.getFunctionType().getNumInputs() - 1;
    bool isLast = &stage == &last;
    if (extras > (isLast ? 1u : 0u))
      return mlir::emitError(stage.forward.getLoc())
             << "@" << stage.forward.getSymName() << " takes " << extras
             << " arguments besides the stage input; the executor passes "
                "only the labels, to the last stage";
  }
  if (failed(splitCheck(input, firstType.getInput(0), "input")))
    return failure();
  bool takesLabels = lastType.getNumInputs() == 2;
  if (takesLabels && failed(splitCheck(labels, lastType.getInput(1), "labels")))
    return failure();
  int64_t rows = input.getShape()[0] / m;
  slots.assign(stages.size(), std::vector<Slot>(size_t(m)));
  labelSlices.assign(size_t(m), HostTensor());
  for (int64_t mb = 0; mb < m; ++mb) {
    slots[0][size_t(mb)].input = sliceRows(input, mb * rows, rows);
    if (takesLabels) {
      int64_t labelRows = labels.getShape()[0] / m;
      labelSlices[size_t(mb)] = sliceRows(labels, mb * labelRows, labelRows);
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Actions
//===----------------------------------------------------------------------===//

SmallVector<HostTensor> Executor::forwardArgs(Stage &stage, int64_t mb) {
  SmallVector<HostTensor> args{slots[size_t(stage.index)][size_t(mb)].input};
  if (stage.forward.getFunctionType().getNumInputs() == 2)
    args.push_back(labelSlices[size_t(mb)]);
  return args;
}

Outcome Executor::runForward(Operation *op, Stage &stage, int64_t mb) {
  Slot &slot = slots[size_t(stage.index)][size_t(mb)];
  if (slot.forwardDone) {
    actionError(op) << "runs the forward of micro-batch " << mb
                    << " a second time";
    return Outcome::Failed;
  }
  if (!slot.input.isValid() && stage.index > 0) {
    // Handed over by the previous stage on the same rank.
    Stage &prev = stages[size_t(stage.index - 1)];
    Slot &prevSlot = slots[size_t(prev.index)][size_t(mb)];
    if (prev.rank == stage.rank && prevSlot.forwardDone)
      slot.input = prevSlot.output;
  }
  if (!slot.input.isValid()) {
    actionError(op) << "has no input activation (no earlier receive of it, "
                       "nor a forward of the previous stage on this rank)";
    return Outcome::Failed;
  }
  FailureOr<std::vector<HostTensor>> results = interpretFunction(
      stage.forward, forwardArgs(stage, mb), params, rngKey(mb));
  if (failed(results)) {
    actionError(op) << "the stage's forward @" << stage.forward.getSymName()
                    << " failed";
    return Outcome::Failed;
  }
  if (results->empty()) {
    actionError(op) << "the stage's forward returns nothing";
    return Outcome::Failed;
  }
  slot.output = (*results)[0];
  unsigned numSaved = getSavedCount(stage.forward);
  if (results->size() < 1 + numSaved) {
    actionError(op) << "the stage's forward returns " << results->size()
                    << " values, fewer than its output and " << numSaved
                    << " saved values";
    return Outcome::Failed;
  }
  slot.saved.assign(results->end() - numSaved, results->end());
  slot.forwardDone = true;
  if (stage.index + 1 == int64_t(stages.size()) &&
      (slot.output.getDType() != GPIPE_RT_F32 ||
       slot.output.getNumElements() != 1)) {
    actionError(op) << "the last stage returns " << slot.output.getTypeString()
                    << ", not a scalar f32 loss";
    return Outcome::Failed;
  }
  return Outcome::Ran;
}

LogicalResult Executor::accumulate(Operation *op, Stage &stage, int64_t mb,
                                   const GradientLayout &layout,
                                   ArrayRef<HostTensor> results,
                                   const GradientAccumulation &inPlace) {
  int64_t &next = nextWeightMb[size_t(stage.index)];
  if (mb != next)
    return actionError(op)
           << "parameter gradients of micro-batch " << mb
           << " arrive when micro-batch " << next
           << " is due; gradients accumulate in micro-batch order 0.."
           << numMicrobatches - 1
           << " so that they are the same for every schedule";
  ++next;
  for (auto [i, name] : llvm::enumerate(layout.params)) {
    if (inPlace.into.count(layout.firstParamResult + i))
      continue; // its GEMM added it into the gradient
    const HostTensor &g = results[layout.firstParamResult + i];
    const HostTensor *p = params.lookup(name);
    if (!p || g.getDType() != GPIPE_RT_F32 || g.getShape() != p->getShape())
      return actionError(op) << "gradient " << g.getTypeString()
                             << " does not fit parameter @" << name;
    auto it = gradients.find(name);
    if (it == gradients.end()) {
      // The first micro-batch's gradient starts the sum (copied: the
      // interpreter's results may share storage).
      gradients.emplace(name, copyOf(g));
      continue;
    }
    HostTensor &acc = it->second;
    int32_t rank = int32_t(acc.getRank());
    float *sum = static_cast<float *>(acc.getMutableData());
    if (gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, sum, acc.getShape().data(), rank,
                                g.getF32().data(), g.getShape().data(), rank,
                                sum, acc.getShape().data(),
                                rank) != GPIPE_RT_SUCCESS)
      return actionError(op)
             << "accumulating @" << name << ": " << gpipe_rt_last_error();
  }
  return success();
}

Outcome Executor::runBackward(Operation *op, Stage &stage, int64_t mb,
                              ActionKind kind) {
  Slot &slot = slots[size_t(stage.index)][size_t(mb)];
  bool last = stage.index + 1 == int64_t(stages.size());
  if (!slot.forwardDone) {
    actionError(op) << "runs before the forward of micro-batch " << mb;
    return Outcome::Failed;
  }
  if (slot.backwardDone ||
      (kind == ActionKind::BackwardInput && slot.inputGradDone)) {
    actionError(op) << "runs a second time for micro-batch " << mb;
    return Outcome::Failed;
  }
  if (kind == ActionKind::BackwardWeight && !slot.inputGradDone) {
    actionError(op) << "runs before the input half of micro-batch " << mb;
    return Outcome::Failed;
  }
  // The output gradient: 1 for the loss (the backward scales by 1/M),
  // received, or handed over by the next stage on the same rank.
  if (!slot.outputGrad.isValid()) {
    if (last) {
      slot.outputGrad = HostTensor::fromF32(slot.output.getShape(), {1.0f});
    } else {
      Stage &next = stages[size_t(stage.index + 1)];
      Slot &nextSlot = slots[size_t(next.index)][size_t(mb)];
      if (next.rank == stage.rank && nextSlot.inputGradDone)
        slot.outputGrad = nextSlot.inputGrad;
    }
  }
  if (!slot.outputGrad.isValid()) {
    actionError(op) << "has no output gradient (no earlier receive of it, "
                       "nor a backward of the next stage on this rank)";
    return Outcome::Failed;
  }
  func::FuncOp func = kind == ActionKind::Backward ? stage.backward
                      : kind == ActionKind::BackwardInput
                          ? stage.backwardInput
                          : stage.backwardWeight;
  const GradientLayout &layout =
      kind == ActionKind::Backward        ? stage.backwardLayout
      : kind == ActionKind::BackwardInput ? stage.inputLayout
                                          : stage.weightLayout;
  if (!func) {
    actionError(op) << "the stage declares no split backward";
    return Outcome::Failed;
  }
  // (forward arguments..., one seed per float result of the forward): the
  // output gradient for result 0, zeros for any other.
  SmallVector<HostTensor> args = forwardArgs(stage, mb);
  args.append(slot.saved.begin(), slot.saved.end());
  unsigned numDeferred = nn::NNDialect::getDeferredCount(func);
  FunctionType fwdType = stage.forward.getFunctionType();
  for (auto [i, type] : llvm::enumerate(
           fwdType.getResults().drop_back(getSavedCount(stage.forward)))) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !isa<FloatType>(tensor.getElementType()))
      continue;
    if (i == 0) {
      args.push_back(slot.outputGrad);
      continue;
    }
    FailureOr<gpipe_rt_dtype> dtype = getRuntimeDType(tensor.getElementType());
    if (failed(dtype)) {
      actionError(op) << "unsupported result type " << type;
      return Outcome::Failed;
    }
    args.push_back(HostTensor(*dtype, tensor.getShape()));
  }
  if (kind == ActionKind::BackwardWeight) {
    if (slot.deferred.size() != numDeferred) {
      actionError(op) << "@" << func.getSymName() << " takes " << numDeferred
                      << " values from the input half, which handed over "
                      << slot.deferred.size();
      return Outcome::Failed;
    }
    args.append(slot.deferred.begin(), slot.deferred.end());
  }
  // The weight gradients whose GEMM adds into the stage's gradient in
  // place, as compiled code does (the same bits): bound to the gradients.
  GradientAccumulation accumulation;
  if (kind != ActionKind::BackwardInput) {
    accumulation.first = nextWeightMb[size_t(stage.index)] == 0;
    for (auto [index, gemm] :
         nn::NNDialect::getAccumulatingGemms(func, layout.firstParamResult)) {
      unsigned k = index - layout.firstParamResult;
      const HostTensor *p =
          k < layout.params.size() ? params.lookup(layout.params[k]) : nullptr;
      if (!p)
        continue; // accumulate() reports it
      auto it = gradients.find(layout.params[k]);
      if (accumulation.first || it == gradients.end())
        it = gradients
                 .insert_or_assign(layout.params[k],
                                   HostTensor(p->getDType(), p->getShape()))
                 .first;
      accumulation.into[index] = &it->second;
    }
  }
  FailureOr<std::vector<HostTensor>> results =
      interpretFunction(func, args, params, rngKey(mb), &accumulation);
  if (failed(results)) {
    actionError(op) << "the stage's backward @" << func.getSymName()
                    << " failed";
    return Outcome::Failed;
  }
  if (kind != ActionKind::BackwardWeight) {
    if (layout.inputGradResult >= 0)
      slot.inputGrad = (*results)[size_t(layout.inputGradResult)];
    else if (stage.index > 0) {
      actionError(op) << "@" << func.getSymName()
                      << " returns no gradient for the stage input";
      return Outcome::Failed;
    }
    slot.inputGradDone = true;
    if (kind == ActionKind::BackwardInput) {
      if (results->size() < numDeferred) {
        actionError(op) << "@" << func.getSymName() << " returns "
                        << results->size() << " values, fewer than the "
                        << numDeferred << " it hands over";
        return Outcome::Failed;
      }
      slot.deferred.assign(results->end() - numDeferred, results->end());
    }
  }
  if (kind != ActionKind::BackwardInput) {
    if (failed(accumulate(op, stage, mb, layout, *results, accumulation)))
      return Outcome::Failed;
    slot.backwardDone = true;
    // The stage input and the saved values are no longer needed.
    if (stage.index > 0)
      slot.input = HostTensor();
    slot.saved.clear();
    slot.deferred.clear();
  }
  return Outcome::Ran;
}

Outcome Executor::runSend(SendOp send, Stage &stage, int64_t rank, int64_t mb) {
  Slot &slot = slots[size_t(stage.index)][size_t(mb)];
  bool forward = send.isForward();
  int64_t peerStage = stage.index + (forward ? 1 : -1);
  if (peerStage < 0 || peerStage >= int64_t(stages.size())) {
    actionError(send) << "sends past the first or last stage";
    return Outcome::Failed;
  }
  if (stages[size_t(peerStage)].rank != send.getPeerRank()) {
    actionError(send) << "sends to rank " << send.getPeerRank()
                      << ", but stage " << peerStage << " runs on rank "
                      << stages[size_t(peerStage)].rank;
    return Outcome::Failed;
  }
  const HostTensor &payload = forward ? slot.output : slot.inputGrad;
  bool ready = forward ? slot.forwardDone : slot.inputGradDone;
  if (!ready || !payload.isValid()) {
    actionError(send) << "sends the "
                      << (forward ? "activation" : "input gradient")
                      << " of micro-batch " << mb
                      << " before it has been computed";
    return Outcome::Failed;
  }
  if (payload.getType(send.getContext()) != send.getPayload()) {
    actionError(send) << "sends " << payload.getTypeString() << " as payload "
                      << send.getPayload();
    return Outcome::Failed;
  }
  MailboxKey key{forward ? stage.index : stage.index - 1, mb, forward};
  if (!mailbox.emplace(key, Message{payload, rank}).second) {
    actionError(send) << "sends micro-batch " << mb
                      << " across this boundary a second time";
    return Outcome::Failed;
  }
  return Outcome::Ran;
}

Outcome Executor::runRecv(RecvOp recv, Stage &stage, int64_t rank, int64_t mb) {
  Slot &slot = slots[size_t(stage.index)][size_t(mb)];
  bool forward = recv.isForward();
  int64_t peerStage = stage.index + (forward ? -1 : 1);
  if (peerStage < 0 || peerStage >= int64_t(stages.size())) {
    actionError(recv) << "receives from past the first or last stage";
    return Outcome::Failed;
  }
  if (stages[size_t(peerStage)].rank != recv.getPeerRank()) {
    actionError(recv) << "receives from rank " << recv.getPeerRank()
                      << ", but stage " << peerStage << " runs on rank "
                      << stages[size_t(peerStage)].rank;
    return Outcome::Failed;
  }
  MailboxKey key{forward ? stage.index - 1 : stage.index, mb, forward};
  auto it = mailbox.find(key);
  if (it == mailbox.end())
    return Outcome::Blocked;
  Message message = std::move(it->second);
  mailbox.erase(it);
  if (message.fromRank != recv.getPeerRank()) {
    actionError(recv) << "receives from rank " << recv.getPeerRank()
                      << " a message rank " << message.fromRank << " sent";
    return Outcome::Failed;
  }
  if (message.payload.getType(recv.getContext()) != recv.getPayload()) {
    actionError(recv) << "receives " << message.payload.getTypeString()
                      << " as payload " << recv.getPayload();
    return Outcome::Failed;
  }
  HostTensor &target = forward ? slot.input : slot.outputGrad;
  if (target.isValid()) {
    actionError(recv) << "receives micro-batch " << mb << " a second time";
    return Outcome::Failed;
  }
  target = std::move(message.payload);
  (void)rank;
  return Outcome::Ran;
}

Outcome Executor::runStep(Operation *op, Stage &stage) {
  if (stepped[size_t(stage.index)]) {
    actionError(op) << "steps the stage a second time";
    return Outcome::Failed;
  }
  if (nextWeightMb[size_t(stage.index)] != numMicrobatches) {
    actionError(op) << "steps after " << nextWeightMb[size_t(stage.index)]
                    << " of " << numMicrobatches << " micro-batches' backwards";
    return Outcome::Failed;
  }
  stepped[size_t(stage.index)] = true;
  if (!options.sgdLearningRate)
    return Outcome::Ran;
  for (const std::string &name : stage.params) {
    const HostTensor *p = params.lookup(name);
    const HostTensor &g = gradients.at(name);
    // A fresh tensor: earlier readers keep the old values.
    HostTensor updated = copyOf(*p);
    if (gpipe_rt_cpu_sgd_update_f32(
            static_cast<float *>(updated.getMutableData()), g.getF32().data(),
            updated.getNumElements(),
            *options.sgdLearningRate) != GPIPE_RT_SUCCESS) {
      actionError(op) << "updating @" << name << ": " << gpipe_rt_last_error();
      return Outcome::Failed;
    }
    params.set(name, std::move(updated));
  }
  return Outcome::Ran;
}

Outcome Executor::step(int64_t rank, int64_t position, Operation *op,
                       int64_t mb) {
  currentRank = rank;
  currentPosition = position;
  currentMb = mb;
  auto action = dyn_cast<ActionOpInterface>(op);
  if (!action) {
    actionError(op) << "is not a pipeline action";
    return Outcome::Failed;
  }
  auto it = stageIndex.find(action.getStageSymbol());
  if (it == stageIndex.end()) {
    actionError(op) << "names a stage the pipeline lacks";
    return Outcome::Failed;
  }
  Stage &stage = stages[size_t(it->second)];
  ActionKind kind = action.getActionKind();
  bool hasMb = hasMicrobatch(kind);
  if (hasMb && (mb < 0 || mb >= numMicrobatches)) {
    actionError(op) << "micro-batch " << mb << " is out of range";
    return Outcome::Failed;
  }
  switch (kind) {
  case ActionKind::Forward:
    return runForward(op, stage, mb);
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
  case ActionKind::BackwardWeight:
    return runBackward(op, stage, mb, kind);
  case ActionKind::Recompute:
    // The backward functions recompute the forward themselves.
    if (!slots[size_t(stage.index)][size_t(mb)].forwardDone) {
      actionError(op) << "recomputes before the forward";
      return Outcome::Failed;
    }
    return Outcome::Ran;
  case ActionKind::SendF:
  case ActionKind::SendB:
    return runSend(cast<SendOp>(op), stage, rank, mb);
  case ActionKind::RecvF:
  case ActionKind::RecvB:
    return runRecv(cast<RecvOp>(op), stage, rank, mb);
  case ActionKind::ReduceGrad:
    // One data-parallel replica: nothing to reduce.
    return Outcome::Ran;
  case ActionKind::Step:
    return runStep(op, stage);
  case ActionKind::SumTied:
  case ActionKind::ClipGrad:
    // Tied and clipping pipelines are refused when the executor is built.
    break;
  }
  actionError(op) << "has an unknown action kind";
  return Outcome::Failed;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

FailureOr<PipelineStepResult> Executor::run(const HostTensor &input,
                                            const HostTensor &labels) {
  if (failed(findPipeline()) || failed(readStages()) ||
      failed(splitBatch(input, labels)))
    return failure();
  nextWeightMb.assign(stages.size(), 0);
  stepped.assign(stages.size(), false);

  // Each rank's actions in order, loops unrolled: (op, micro-batch).
  SmallVector<SmallVector<std::pair<Operation *, int64_t>>> programs;
  for (ProgramOp program : pipeline.getPrograms()) {
    SmallVector<std::pair<Operation *, int64_t>> actions;
    walkProgram(program, [&](ActionOpInterface action, int64_t mb) {
      actions.push_back({action, mb});
    });
    programs.push_back(std::move(actions));
  }
  PipelineStepResult result;
  std::vector<size_t> pc(programs.size(), 0);
  while (true) {
    bool progress = false, done = true;
    for (auto [rank, actions] : llvm::enumerate(programs)) {
      while (pc[rank] < actions.size()) {
        auto [op, mb] = actions[pc[rank]];
        Outcome outcome = step(int64_t(rank), int64_t(pc[rank]), op, mb);
        if (outcome == Outcome::Failed)
          return failure();
        if (outcome == Outcome::Blocked)
          break;
        result.trace.emplace_back(int64_t(rank), int64_t(pc[rank]));
        ++pc[rank];
        progress = true;
      }
      done = done && pc[rank] == actions.size();
    }
    if (done)
      break;
    if (!progress) {
      InFlightDiagnostic diag = emitPipelineError(pipeline)
                                << "is stuck: no rank can run its next action";
      for (auto [rank, actions] : llvm::enumerate(programs))
        if (pc[rank] < actions.size())
          diag.attachNote(actions[pc[rank]].first->getLoc())
              << "rank " << rank << " waits at action " << pc[rank] << " ("
              << describe(actions[pc[rank]].first, actions[pc[rank]].second)
              << ")";
      return diag;
    }
  }

  // Every micro-batch ran forward and backward on every stage.
  for (Stage &stage : stages) {
    if (nextWeightMb[size_t(stage.index)] != numMicrobatches)
      return emitPipelineError(pipeline)
             << "stage @" << stage.op.getSymName() << " ran "
             << nextWeightMb[size_t(stage.index)] << " of " << numMicrobatches
             << " backwards";
  }
  double total = 0.0;
  for (int64_t mb = 0; mb < numMicrobatches; ++mb) {
    float loss = slots.back()[size_t(mb)].output.getF32()[0];
    result.microbatchLosses.push_back(loss);
    total += double(loss);
  }
  result.loss = total / double(numMicrobatches);
  for (Stage &stage : stages)
    for (const std::string &name : stage.params)
      result.gradients[name] = gradients.at(name);
  if (!mailbox.empty())
    return emitPipelineError(pipeline)
           << mailbox.size() << " sent messages were never received";
  return result;
}

FailureOr<PipelineStepResult>
mlir::gpipe::executePipeline(ModuleOp module, const HostTensor &input,
                             const HostTensor &labels, ParameterStore &params,
                             const PipelineExecutorOptions &options) {
  Executor executor(module, params, options);
  return executor.run(input, labels);
}
