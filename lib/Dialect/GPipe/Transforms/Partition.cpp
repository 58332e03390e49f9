//===- Partition.cpp - Cut a layered network into pipeline stages ---------===//
//
// Implements `gpipe-partition` and the partition functions of Transforms.h:
// reads the chain of nn.layer ops of the network function
// (`readLayerChain`), estimates each layer with the cost model
// (`estimateLayerCosts`), partitions the chain into K contiguous stages,
// exactly or by a manual balance (`chooseStageBoundaries`), and builds the
// per-stage forward and backward functions (`buildStageForward`,
// `buildStageBackward`: the backward recomputes the forward under
// remat=stage, and reads the values the forward saved under remat=none),
// the gpipe.stage declarations (`estimateStageTimes`, `declareStage`) and an
// empty gpipe.pipeline for a schedule to fill (`declarePipeline`). The pass
// checks its options and drives these.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Partition.h"
#include "gpipe/Analysis/CostModel.h"
#include "gpipe/Analysis/MeasuredProfile.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPEPARTITIONPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

FailureOr<LayerChain> mlir::gpipe::readLayerChain(func::FuncOp func) {
  LayerChain chain{func, {}, {}, {}};
  if (func.isExternal())
    return mlir::emitError(func.getLoc(), "network function has no body"),
           failure();
  Block &body = func.getBody().front();
  // Said in the model's terms: gpipe-compile forms the layers itself, so no
  // layers there means a network that computes nothing from its input. Only
  // ops left ungrouped (this pass run on its own) call for nn-form-layers.
  if (llvm::none_of(body.without_terminator(),
                    [](Operation &op) { return isa<nn::LayerOp>(op); })) {
    bool ungrouped = llvm::any_of(body.without_terminator(), [](Operation &op) {
      return !isa<nn::CrossEntropyOp, nn::MSEOp>(op);
    });
    if (ungrouped)
      return mlir::emitError(func.getLoc(),
                             "the network has no layers to cut into stages: "
                             "its ops are not grouped into nn.layer ops (run "
                             "nn-form-layers first)"),
             failure();
    return mlir::emitError(func.getLoc(),
                           "the network has no layers to cut into stages: no "
                           "op computes its output from its input"),
           failure();
  }
  for (Operation &op : body.without_terminator()) {
    if (auto layer = dyn_cast<nn::LayerOp>(op)) {
      if (!chain.tail.empty())
        return mlir::emitError(layer.getLoc(), "layer '")
                   << layer.getName()
                   << "' follows non-layer ops; expected the loss last",
               failure();
      chain.layers.push_back(layer);
      continue;
    }
    if (chain.layers.empty())
      return mlir::emitError(
                 op.getLoc(),
                 "this op comes before the network's first layer and belongs "
                 "to none; every op before the loss must be in an nn.layer"),
             failure();
    chain.tail.push_back(&op);
  }

  for (auto [i, layer] : llvm::enumerate(chain.layers)) {
    if (layer.getNumResults() != 1)
      return mlir::emitError(layer.getLoc(), "layer '")
                 << layer.getName() << "' has " << layer.getNumResults()
                 << " results; a pipeline boundary carries exactly one tensor",
             failure();
    if (layer.getInputs().size() != 1)
      return mlir::emitError(layer.getLoc(), "layer '")
                 << layer.getName() << "' takes " << layer.getInputs().size()
                 << " inputs; a pipeline stage takes exactly one activation",
             failure();
    Value in = layer.getInputs()[0];
    bool chained = i == 0 ? isa<BlockArgument>(in)
                          : in == chain.layers[i - 1].getResult(0);
    if (!chained)
      return mlir::emitError(layer.getLoc(), "layer '")
                 << layer.getName()
                 << "' does not take the previous layer's output",
             failure();
    // Only the next layer (or the tail, for the last) may use the output.
    for (Operation *user : layer.getResult(0).getUsers()) {
      bool ok = i + 1 < chain.layers.size()
                    ? user == chain.layers[i + 1].getOperation()
                    : !isa<nn::LayerOp>(user);
      if (!ok)
        return mlir::emitError(layer.getLoc(), "output of layer '")
                   << layer.getName() << "' skips the next layer",
               failure();
    }
  }
  Value first = chain.layers.front().getInputs()[0];
  for (Operation *op : chain.tail)
    for (Value v : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && arg != first && !llvm::is_contained(chain.tailArgs, arg))
        chain.tailArgs.push_back(arg);
  return chain;
}

/// Parameters (by symbol) each layer reads.
static SmallVector<StringRef> paramsOf(nn::LayerOp layer) {
  SmallVector<StringRef> names;
  layer.getBodyBlock().walk([&](nn::ParamOp p) {
    if (!llvm::is_contained(names, p.getName()))
      names.push_back(p.getName());
  });
  return names;
}

/// Bytes of the parameters a layer reads: the types of its `nn.param` reads
/// (verified equal to the declarations'), each distinct parameter once.
static int64_t paramBytesOf(nn::LayerOp layer) {
  llvm::SmallDenseSet<StringRef, 8> seen;
  int64_t bytes = 0;
  layer.getBodyBlock().walk([&](nn::ParamOp p) {
    if (seen.insert(p.getName()).second)
      bytes += nn::tensorBytes(p.getType());
  });
  return bytes;
}

func::FuncOp mlir::gpipe::buildStageForward(OpBuilder &builder,
                                            const LayerChain &chain,
                                            size_t begin, size_t end,
                                            StringRef name) {
  // The partition's last boundary is the number of layers.
  bool last = end == chain.layers.size();
  nn::LayerOp firstLayer = chain.layers[begin],
              lastLayer = chain.layers[end - 1];
  Operation *terminator = chain.func->getRegion(0).front().getTerminator();
  Location loc = firstLayer.getLoc();
  SmallVector<Type> inputs{firstLayer.getInputs()[0].getType()};
  if (last)
    for (BlockArgument arg : chain.tailArgs)
      inputs.push_back(arg.getType());
  Type output = last && !chain.tail.empty()
                    ? terminator->getOperand(0).getType()
                    : lastLayer.getResult(0).getType();
  auto func = func::FuncOp::create(builder, loc, name,
                                   builder.getFunctionType(inputs, output));
  Block *entry = func.addEntryBlock();
  IRMapping mapping;
  mapping.map(firstLayer.getInputs()[0], entry->getArgument(0));
  if (last)
    for (auto [i, arg] : llvm::enumerate(chain.tailArgs))
      mapping.map(arg, entry->getArgument(i + 1));
  OpBuilder body = OpBuilder::atBlockEnd(entry);
  for (size_t i = begin; i < end; ++i)
    body.clone(*chain.layers[i], mapping);
  Value result = mapping.lookup(lastLayer.getResult(0));
  if (last) {
    for (Operation *op : chain.tail)
      body.clone(*op, mapping);
    if (!chain.tail.empty())
      result = mapping.lookup(terminator->getOperand(0));
  }
  func::ReturnOp::create(body, loc, result);
  return func;
}

/// The fingerprint a profile of the network `func` records
/// (gpipe::abi::getModelFingerprint): its module's parameters but the tied
/// copies, and one sample of its (packed) input.
static std::string getModelFingerprint(func::FuncOp func) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  if (auto module = func->getParentOfType<ModuleOp>())
    for (auto decl : module.getBody()->getOps<nn::ParameterOp>())
      if (!decl.getTiedToAttr())
        if (auto type = dyn_cast<RankedTensorType>(decl.getType()))
          params.push_back({decl.getSymName().str(),
                            std::vector<int64_t>(type.getShape().begin(),
                                                 type.getShape().end())});
  std::vector<int64_t> sample;
  std::string dtype;
  if (auto input =
          dyn_cast<RankedTensorType>(func.getArgumentTypes().front())) {
    sample.assign(input.getShape().begin() + (input.getRank() > 0 ? 1 : 0),
                  input.getShape().end());
    // The runtime's spelling of the dtype, as gpipe-run's metadata has it.
    FailureOr<gpipe_rt_dtype> d = getRuntimeDType(input.getElementType());
    if (succeeded(d)) {
      dtype = ::gpipe::rt::dtypeName(*d);
    } else {
      llvm::raw_string_ostream os(dtype);
      os << input.getElementType();
    }
  }
  return ::gpipe::abi::getModelFingerprint(params, sample, dtype);
}

/// Reads the profile at `path` for the network `chain` run by `workers`
/// ranks under the remat policy `remat` and the schedule `schedule`: fills
/// `costInput`'s measured per-layer times (estimated from the sizes it has
/// when it lacks this one) and `device`'s link, and `out` with the times
/// for this pipeline's micro-batch size and ranks. Errors (no file, no
/// profile, a layer it lacks) are emitted.
static LogicalResult
readMeasuredProfile(StringRef path, const LayerChain &chain, int64_t workers,
                    StringRef remat, StringRef schedule, bool forwardOnly,
                    std::optional<ProfileMeasurement> &out,
                    CostModelInput &costInput, DeviceProfile &device) {
  func::FuncOp func = chain.func;
  std::string error;
  std::optional<MeasuredProfile> profile =
      MeasuredProfile::read(path.str(), error);
  if (!profile)
    return mlir::emitError(func.getLoc(), error);
  // The profile must be this model's: a model of the same layer names but
  // other sizes would be predicted from times that are not its own.
  std::string model = getModelFingerprint(func);
  if (profile->model.empty())
    mlir::emitWarning(func.getLoc(), "profile '")
        << path
        << "' has no model fingerprint (written by an older gpipe-run): "
           "its layers are matched by name only";
  else if (profile->model != model)
    return mlir::emitError(func.getLoc(), "profile '")
           << path << "' was measured on another model: its 'model' is "
           << profile->model << ", this model's " << model
           << " (the parameters' names and shapes or the input differ); "
              "measure this model with gpipe-run --profile";
  // A training compile needs backward times; a forward-only one prefers
  // forward-only runs' measurements (either has the forward times).
  auto &all = profile->measurements;
  bool haveForwardOnly = llvm::any_of(
      all, [](const ProfileMeasurement &m) { return m.forwardOnly; });
  bool haveTraining = llvm::any_of(
      all, [](const ProfileMeasurement &m) { return !m.forwardOnly; });
  if (!forwardOnly && !haveTraining)
    return mlir::emitError(func.getLoc(), "profile '")
           << path
           << "' holds only forward times (measured by a --predict run); a "
              "training compile needs a training run's backward times: "
              "gpipe-run model.so --profile "
           << path;
  bool keepForwardOnly = forwardOnly && haveForwardOnly;
  llvm::erase_if(all, [&](const ProfileMeasurement &m) {
    return m.forwardOnly != keepForwardOnly;
  });
  auto inputType = dyn_cast<ShapedType>(func.getArgumentTypes().front());
  int64_t samples =
      inputType && inputType.getRank() > 0 ? inputType.getDimSize(0) : 1;
  std::string how;
  std::optional<ProfileMeasurement> estimated =
      profile->estimate(samples, workers, how, remat, schedule);
  if (!estimated)
    return mlir::emitError(func.getLoc(), "profile '")
           << path << "' has no measurements";
  out = std::move(estimated);
  const ProfileMeasurement *measured = &*out;
  for (nn::LayerOp layer : chain.layers) {
    const MeasuredLayer *m = measured->findLayer(layer.getName());
    if (!m)
      return mlir::emitError(layer.getLoc(), "profile '")
             << path << "' has no layer '" << layer.getName()
             << "' (it was measured on another model, or with another "
                "--granularity); measure this model with gpipe-run --profile";
    MeasuredLayerTime t;
    t.forward = m->forward;
    t.backward = m->backward;
    t.recompute = m->recompute;
    costInput.measured.push_back(t);
  }
  if (const ProfileMeasurement *link = profile->selectLink(samples)) {
    device.linkBandwidth = *link->linkBandwidth;
    device.linkLatency = link->linkLatency.value_or(0.0);
  }
  if (!how.empty())
    mlir::emitWarning(func.getLoc(), "profile '")
        << path << "' has no measurement of micro-batches of " << samples
        << " samples; its times are " << how;
  if (measured->workers != workers)
    mlir::emitWarning(func.getLoc(), "profile '")
        << path << "' was measured with " << measured->workers
        << " ranks running, this pipeline runs " << workers
        << "; layers may run at another speed";
  if (!measured->remat.empty() && measured->remat != remat)
    mlir::emitWarning(func.getLoc(), "profile '")
        << path << "' has no measurement under remat " << remat
        << "; its times were measured under remat " << measured->remat
        << " (measure this policy too: its backward runs at another speed)";
  return success();
}

/// Wraps the ops of `backward` that recompute its forward (those of
/// `recomputed` still in its body) in a `gpipe.remat` region of `policy`,
/// yielding the values the gradient ops read. Parameter reads and
/// constants move in front of it: they are reads, not recomputation.
static void wrapRecompute(func::FuncOp backward,
                          const llvm::DenseSet<Operation *> &recomputed,
                          Remat policy) {
  Block &block = backward.getBody().front();
  SmallVector<Operation *> body, reads;
  for (Operation &op : block) {
    if (!recomputed.contains(&op))
      continue;
    if (isa<nn::ParamOp>(op) || op.hasTrait<OpTrait::ConstantLike>())
      reads.push_back(&op);
    else
      body.push_back(&op);
  }
  if (body.empty())
    return;
  for (Operation *read : reads)
    read->moveBefore(body.front());
  llvm::DenseSet<Operation *> inBody(body.begin(), body.end());
  SmallVector<Value> escaping;
  for (Operation *op : body)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !inBody.contains(user); }))
        escaping.push_back(result);
  OpBuilder builder(body.front());
  Location loc = body.front()->getLoc();
  auto remat =
      RematOp::create(builder, loc, ValueRange(escaping).getTypes(), policy);
  Block *inner = new Block();
  remat.getBody().push_back(inner);
  for (Operation *op : body)
    op->moveBefore(inner, inner->end());
  builder.setInsertionPointToEnd(inner);
  YieldOp::create(builder, loc, escaping);
  for (auto [value, result] : llvm::zip(escaping, remat.getResults()))
    value.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !remat->isAncestor(use.getOwner());
    });
}

/// Drops from `backward`'s results the gradients of the arguments `drop`
/// selects (listed first by nn.input_grads, by argument number) and the ops
/// only they needed.
static void dropInputGradients(func::FuncOp backward,
                               llvm::function_ref<bool(int64_t)> drop) {
  auto positions =
      backward->getAttrOfType<DenseI64ArrayAttr>(nn::kInputGradsAttrName);
  if (!positions || llvm::none_of(positions.asArrayRef(), drop))
    return;
  auto ret = cast<func::ReturnOp>(backward.getBody().front().getTerminator());
  SmallVector<int64_t> kept;
  SmallVector<Type> results;
  FunctionType type = backward.getFunctionType();
  for (size_t i = positions.size(); i-- > 0;)
    if (drop(positions[i]))
      ret->eraseOperand(unsigned(i));
  for (int64_t position : positions.asArrayRef())
    if (!drop(position))
      kept.push_back(position);
  for (Value v : ret.getOperands())
    results.push_back(v.getType());
  backward.setFunctionType(
      FunctionType::get(backward.getContext(), type.getInputs(), results));
  backward->setAttr(nn::kInputGradsAttrName,
                    DenseI64ArrayAttr::get(backward.getContext(), kept));
  // Erase what only the dropped gradients used, last op first.
  Block &body = backward.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (&op != ret.getOperation() && op.use_empty() && isPure(&op))
      op.erase();
}

OpCostData mlir::gpipe::getCostData(Operation *root) {
  OpCostData data;
  auto fusible = [](Operation *op) { return op && nn::FusedOp::isFusible(op); };
  root->walk([&](nn::CostOpInterface costOp) {
    Operation *op = costOp.getOperation();
    // A fused loop's cost is its body's: count the loop, not its ops again.
    if (op == root || isa<nn::LayerOp>(op) ||
        (op->getParentOfType<nn::FusedOp>() &&
         root->isProperAncestor(op->getParentOfType<nn::FusedOp>())))
      return;
    nn::OpCost c = costOp.getCost();
    data.flops += c.flops;
    data.bytesRead += c.bytesRead;
    data.bytesWritten += c.bytesWritten;
    data.paramBytes += c.paramBytes;
    OpWork work;
    work.kernel = op->getName().stripDialect().str();
    // The largest tensor it touches (a loss's logits, a pooling's input),
    // and its rows.
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (auto type = dyn_cast<ShapedType>(v.getType());
          type && type.hasStaticShape() &&
          type.getNumElements() > work.elements) {
        work.elements = type.getNumElements();
        work.row = type.getRank() > 0 ? type.getShape().back() : 1;
      }
    if (c.gemm.batch > 0) {
      work.gemm = GemmWork{c.gemm.batch,
                           c.gemm.m,
                           c.gemm.n,
                           c.gemm.k,
                           c.gemm.transA,
                           c.gemm.transB,
                           c.gemm.parallelBatch};
      // Besides the GEMM: C's first write (zeros, or the bias per row)
      // and a convolution's im2col columns, whose elements its side work
      // counts.
      work.streamBytes = c.gemmSideBytes + c.bytesWritten;
      if (c.gemmSideBytes > 0)
        work.elements = c.gemmSideBytes / 4;
    } else {
      work.calls = c.calls;
      int64_t bytes = c.bytesRead + c.bytesWritten;
      if (fusible(op)) {
        // Inside a fused loop an operand another loop op produced is in a
        // register, and so is a result only loop ops read.
        for (Value v : op->getOperands())
          if (fusible(v.getDefiningOp()) &&
              v.getType() == op->getResult(0).getType()) {
            bytes -= nn::tensorBytes(v.getType());
            work.calls = 0;
          }
        if (!op->use_empty() &&
            llvm::all_of(op->getUsers(),
                         [&](Operation *user) { return fusible(user); }))
          bytes -= c.bytesWritten;
      }
      work.streamBytes = std::max<int64_t>(bytes, 0);
    }
    if (work.gemm || work.calls || work.streamBytes)
      data.ops.push_back(work);
  });
  return data;
}

double LayerChainCosts::getOverhead(StringRef kind) const {
  if (!measured)
    return 0.0;
  auto it = measured->actionOverhead.find(kind.str());
  return it == measured->actionOverhead.end() ? 0.0 : it->second;
}

FailureOr<LayerChainCosts> mlir::gpipe::estimateLayerCosts(
    const LayerChain &chain, const DeviceProfile &device,
    const PartitionOptions &options, StringRef profileFile) {
  bool forwardOnly = options.forwardOnly;
  LayerChainCosts result;
  result.device = device;
  result.optimizer = options.optimizer;
  // Cost model: one micro-batch per layer.
  CostModelInput costInput;
  costInput.rematerialize = !forwardOnly && options.remat == Remat::Stage;
  for (nn::LayerOp layer : chain.layers)
    costInput.rematerializeLayer.push_back(
        !forwardOnly &&
        (options.remat == Remat::Stage ||
         llvm::is_contained(options.recomputeLayers, layer.getNameAttr())));
  for (nn::LayerOp layer : chain.layers) {
    costInput.layers.push_back(getCostData(layer));
    costInput.outputBytes.push_back(nn::tensorBytes(layer.getType(0)));
    // Weights and their gradient accumulator, plus one micro-batch of the
    // layer's activations; the memory planner refines this estimate.
    int64_t scratch = 0;
    layer.getBodyBlock().walk([&](Operation *op) {
      for (Value r : op->getResults())
        scratch += nn::tensorBytes(r.getType());
    });
    result.memory.push_back((forwardOnly ? 1 : 2) * paramBytesOf(layer) +
                            scratch);
  }
  // A measured profile replaces the estimates.
  if (!profileFile.empty() &&
      failed(readMeasuredProfile(
          profileFile, chain, options.ranks * options.replicas,
          stringifyRemat(options.remat),
          stringifyScheduleKind(options.schedule), forwardOnly, result.measured,
          costInput, result.device)))
    return failure();
  result.costs = computeLayerCosts(costInput, result.device);
  if (!result.costs.ok()) {
    mlir::emitError(chain.func->getLoc(), "cost model: ") << result.costs.error;
    return failure();
  }
  return result;
}

FailureOr<std::vector<int>> mlir::gpipe::chooseStageBoundaries(
    const LayerChain &chain, const LayerChainCosts &costs,
    const PartitionOptions &options, ArrayRef<int64_t> balance,
    std::optional<StringRef> memoryBudget) {
  Location loc = chain.func->getLoc();
  const int64_t numStages = options.getNumStages();
  PartitionProblem problem;
  problem.numStages = static_cast<int>(numStages);
  problem.layerMemory = costs.memory;
  problem.layerTime =
      options.forwardOnly ? costs.costs.forward : costs.costs.total;
  problem.boundaryTime = costs.costs.boundary;
  if (memoryBudget && memoryBudget->empty()) {
    mlir::emitError(loc, kEmptyMemoryBudget);
    return failure();
  }
  if (memoryBudget) {
    std::optional<int64_t> budget = parseBytes(*memoryBudget);
    if (!budget) {
      mlir::emitError(loc, "cannot read memory budget '")
          << *memoryBudget << "' (expected a size such as 16GiB)";
      return failure();
    }
    problem.memoryBudget = budget;
  }
  PartitionResult result;
  if (!balance.empty()) {
    std::vector<int> manual(balance.begin(), balance.end());
    if (static_cast<int64_t>(manual.size()) != numStages) {
      mlir::emitError(loc, "balance lists ")
          << manual.size() << " stages but the pipeline has " << numStages;
      return failure();
    }
    result = partitionManual(problem, manual);
  } else {
    result = partitionOptimal(problem);
  }
  if (!result.ok()) {
    InFlightDiagnostic diag = mlir::emitError(loc, result.error);
    if (result.smallestFeasibleBudget &&
        !StringRef(result.error).contains("smallest budget"))
      diag.attachNote() << "the smallest budget that fits is "
                        << formatBytes(*result.smallestFeasibleBudget);
    return failure();
  }
  return result.partition.firstLayer;
}

FailureOr<StageBackward>
mlir::gpipe::buildStageBackward(func::FuncOp forward, StringRef stageName,
                                const StageBackwardOptions &options) {
  nn::BackwardOptions backwardOptions;
  if (options.last)
    backwardOptions.lossScale = options.lossScale;
  // remat=none: the forward also returns what the backward reads.
  backwardOptions.saveActivations = options.remat != Remat::Stage;
  backwardOptions.recomputeLayers.assign(options.recomputeLayers.begin(),
                                         options.recomputeLayers.end());
  SmallVector<Operation *> recomputed;
  backwardOptions.recomputed = &recomputed;
  FailureOr<func::FuncOp> backward = nn::buildBackwardFunction(
      forward, (stageName + "_bwd").str(), backwardOptions);
  if (failed(backward))
    return failure();
  // The set is only compared against the ops still in the body (nothing
  // is created in between, so an erased op's address is not reused).
  llvm::DenseSet<Operation *> recomputedSet(recomputed.begin(),
                                            recomputed.end());
  // Stage 0's input is the data; the last stage's other arguments are the
  // loss's (the labels, float under mse): neither has a gradient to send.
  dropInputGradients(*backward, [&](int64_t arg) {
    return (options.first && arg == 0) || (options.last && arg > 0);
  });
  if (options.remat != Remat::None && !recomputedSet.empty())
    wrapRecompute(*backward, recomputedSet, options.remat);
  StageBackward result{*backward, {}, {}};
  if (options.split) {
    FailureOr<nn::SplitBackward> halves =
        nn::splitBackwardFunction(*backward, (stageName + "_bwd_input").str(),
                                  (stageName + "_bwd_weight").str());
    if (failed(halves))
      return failure();
    result.input = halves->input;
    result.weight = halves->weight;
  }
  return result;
}

/// The time of the ops of `func` on `device`, forward times all: at the
/// machine's measured rates with one, else by the roofline.
static double getEstimatedTime(func::FuncOp func, const DeviceProfile &device) {
  if (device.machine)
    return mlir::gpipe::forwardTime(getCostData(func), device);
  double seconds = 0;
  func.walk([&](nn::CostOpInterface op) {
    nn::OpCost c = op.getCost();
    seconds += mlir::gpipe::forwardTime(
        {c.flops, c.bytesRead, c.bytesWritten, c.paramBytes, {}}, device);
  });
  return seconds;
}

/// Sets `times`' input and weight halves of the split backward `backward`
/// of the stage of layers [begin, end) of `chain`: the profile's
/// measurements of the halves when it has them for every layer (then the
/// backward is their sum), else `times.backward` divided between them.
static void splitBackwardTime(const LayerChain &chain,
                              const LayerChainCosts &costs, int begin, int end,
                              const StageBackward &backward,
                              StageTimes &times) {
  // Measured halves of a split backward: the input half also recomputes.
  if (const std::optional<ProfileMeasurement> &measured = costs.measured) {
    double in = costs.getOverhead("backward_input");
    double w = costs.getOverhead("backward_weight");
    bool all = true;
    for (int l = begin; l < end && all; ++l) {
      const MeasuredLayer *m =
          measured->findLayer(nn::LayerOp(chain.layers[l]).getName());
      all = m->backwardInput && m->backwardWeight;
      if (all) {
        in += *m->backwardInput + costs.costs.recompute[l];
        w += *m->backwardWeight;
      }
    }
    if (all) {
      times.input = in;
      times.weight = w;
      times.backward = in + w;
      return;
    }
  }
  // How the backward's time divides between its halves: in proportion to
  // the estimated times of their ops (the input half of a transformer
  // stage carries the attention and normalization gradients, the weight
  // half little more than the weight GEMMs; stage 0's input half is empty).
  double in = getEstimatedTime(backward.input, costs.device);
  double w = getEstimatedTime(backward.weight, costs.device);
  double share = in + w > 0 ? in / (in + w) : 0.5;
  times.input = *times.backward * share;
  times.weight = *times.backward * (1 - share);
}

StageTimes mlir::gpipe::estimateStageTimes(const LayerChain &chain,
                                           const LayerChainCosts &costs,
                                           int begin, int end,
                                           const StageBackward *backward,
                                           int64_t replicas) {
  StageTimes times;
  times.forward = costs.getOverhead("forward");
  for (int l = begin; l < end; ++l)
    times.forward += costs.costs.forward[l];
  if (!backward)
    return times;
  double backwardTime = costs.getOverhead("backward");
  for (int l = begin; l < end; ++l)
    backwardTime += costs.costs.backward[l] + costs.costs.recompute[l];
  times.backward = backwardTime;
  if (backward->input)
    splitBackwardTime(chain, costs, begin, end, *backward, times);
  // The optimizer's update, at the measured rate per parameter byte; with
  // a machine profile, the streams it moves at the measured rate: the
  // parameters read and written, the gradients read and zeroed, and each
  // state buffer read and written.
  int64_t stageParamBytes = 0;
  for (int l = begin; l < end; ++l)
    stageParamBytes += paramBytesOf(chain.layers[l]);
  if (costs.measured && costs.measured->optimizerSecondsPerByte) {
    times.step =
        *costs.measured->optimizerSecondsPerByte * double(stageParamBytes);
  } else if (const DeviceProfile &device = costs.device;
             device.machine && stageParamBytes > 0) {
    std::optional<double> update = device.machine->optimizerSeconds(
        ::gpipe::abi::getOptimizerName(costs.optimizer), stageParamBytes,
        device.rankThreads);
    if (!update) {
      int64_t streams =
          4 + 2 * ::gpipe::abi::getOptimizerStateFactor(costs.optimizer);
      update = device.machine->streamSeconds(streams * stageParamBytes,
                                             device.rankThreads);
    }
    times.step = *update * device.oversubscription;
  }
  // The replicas' all-reduce of the stage's gradients.
  if (replicas > 1) {
    int64_t gradBytes = 0;
    for (int l = begin; l < end; ++l)
      gradBytes += paramBytesOf(chain.layers[l]);
    times.reduce = allReduceTime(gradBytes, replicas, costs.device);
  }
  return times;
}

StageOp mlir::gpipe::declareStage(OpBuilder &builder, StringRef name,
                                  int64_t index, func::FuncOp forward,
                                  const StageBackward *backward,
                                  const StageTimes &times) {
  // A forward-only stage refers to no backward, an unsplit one to no halves.
  StageBackward none;
  const StageBackward &bwd = backward ? *backward : none;
  auto refOf = [](func::FuncOp func) {
    return func ? FlatSymbolRefAttr::get(func) : FlatSymbolRefAttr();
  };
  auto attrOf = [&](std::optional<double> seconds) {
    return seconds ? builder.getF64FloatAttr(*seconds) : FloatAttr();
  };
  FunctionType type = forward.getFunctionType();
  return StageOp::create(
      builder, forward.getLoc(), builder.getStringAttr(name),
      builder.getI64IntegerAttr(index), TypeAttr::get(type.getInput(0)),
      TypeAttr::get(type.getResult(0)), FlatSymbolRefAttr::get(forward),
      refOf(bwd.backward), refOf(bwd.input), refOf(bwd.weight),
      builder.getF64FloatAttr(times.forward), attrOf(times.backward),
      attrOf(times.input), attrOf(times.weight), attrOf(times.reduce),
      attrOf(times.step));
}

PipelineOp mlir::gpipe::declarePipeline(OpBuilder &builder, Location loc,
                                        const PartitionOptions &options,
                                        ArrayRef<StageOp> stages) {
  MLIRContext *context = builder.getContext();
  SmallVector<Attribute> stageRefs;
  for (StageOp stage : stages)
    stageRefs.push_back(FlatSymbolRefAttr::get(stage));
  auto pipeline = PipelineOp::create(
      builder, loc, builder.getStringAttr(options.pipelineName),
      builder.getArrayAttr(stageRefs),
      builder.getI64IntegerAttr(options.microbatches),
      ScheduleKindAttr::get(context, options.schedule),
      options.virtualStages > 1
          ? builder.getI64IntegerAttr(options.virtualStages)
          : IntegerAttr(),
      RematAttr::get(context, options.remat),
      options.replicas > 1 ? builder.getI64IntegerAttr(options.replicas)
                           : IntegerAttr(),
      options.forwardOnly ? builder.getUnitAttr() : UnitAttr(),
      options.clipGradNorm > 0 ? builder.getF64FloatAttr(options.clipGradNorm)
                               : FloatAttr(),
      MemoryPlanAttr());
  pipeline.getBody().emplaceBlock();
  return pipeline;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Checks what a forward-only pipeline allows: GPipe's forward half of one
/// stage per rank, one replica, no split backward, and a network without a
/// loss. Errors at the network function.
static LogicalResult checkForwardOnly(func::FuncOp func, ScheduleKind schedule,
                                      int64_t virtualStages, int64_t replicas,
                                      bool splitBackward) {
  // The schedule only places the stages (an evaluation pipeline's are
  // where training placed them); the order is the forward half.
  if (schedule == ScheduleKind::Custom || replicas != 1 || splitBackward)
    return mlir::emitError(func.getLoc(),
                           "a forward-only pipeline runs the forward half of "
                           "a generated schedule: expected a schedule other "
                           "than custom, one replica and no split backward");
  bool hasLoss = false;
  func.walk([&](Operation *op) {
    hasLoss |= isa<nn::CrossEntropyOp, nn::MSEOp>(op);
  });
  if (hasLoss)
    return mlir::emitError(func.getLoc(),
                           "a forward-only pipeline computes no loss, but the "
                           "network has one attached");
  return success();
}

/// Checks that `chain` has a layer for each of `options`' stages. Errors at
/// the network function.
static LogicalResult checkStageCount(const LayerChain &chain,
                                     const PartitionOptions &options) {
  int64_t numLayers = chain.layers.size();
  int64_t numStages = options.getNumStages();
  if (numStages <= numLayers)
    return success();
  InFlightDiagnostic diag = mlir::emitError(chain.func->getLoc(), "cannot cut ")
                            << numLayers << " layers into " << numStages
                            << " stages";
  if (options.virtualStages > 1)
    diag << " (" << options.ranks << " ranks x " << options.virtualStages
         << " virtual stages)";
  return failure();
}

/// The layers of `chain` called `names` (remat selective's recompute-layers),
/// by name. Errors at the network function for a name no layer has.
static FailureOr<SmallVector<StringAttr>>
findLayers(const LayerChain &chain, ArrayRef<std::string> names) {
  SmallVector<StringAttr> layers;
  for (const std::string &name : names) {
    auto it = llvm::find_if(chain.layers, [&](nn::LayerOp layer) {
      return layer.getName() == name;
    });
    if (it == chain.layers.end()) {
      InFlightDiagnostic diag =
          mlir::emitError(chain.func->getLoc(), "recompute-layers names '")
          << name
          << "', which is no layer of the "
             "network; its layers are";
      for (nn::LayerOp layer : chain.layers)
        diag << " " << layer.getName();
      return failure();
    }
    layers.push_back(nn::LayerOp(*it).getNameAttr());
  }
  return layers;
}

/// Checks that no parameter is read on two of the stages `first` cuts
/// `chain` into: it would need its gradients synchronized. Errors at the
/// layer that reads it on the later stage.
static LogicalResult checkParameterOwners(const LayerChain &chain,
                                          ArrayRef<int> first) {
  llvm::StringMap<int64_t> owner;
  for (int64_t s = 0, e = first.size() - 1; s < e; ++s)
    for (int l = first[s]; l < first[s + 1]; ++l)
      for (StringRef name : paramsOf(chain.layers[l])) {
        auto [it, inserted] = owner.try_emplace(name, s);
        if (!inserted && it->second != s)
          return mlir::emitError(chain.layers[l]->getLoc(), "parameter '")
                 << name << "' is shared by stages " << it->second << " and "
                 << s
                 << "; give each layer that reads it a copy of its own first "
                    "(nn-copy-tied-parameters, which gpipe-compile runs)";
      }
  return success();
}

/// Builds the stages of `options`' pipeline over `chain` cut at `first` at
/// `builder`, in order: each stage's forward, backward (training) and
/// declaration; appends the declarations to `stages` and the forwards to
/// `forwards`. Errors at the network function (a stage's name is taken in
/// `module`) or where a backward cannot be built.
static LogicalResult
buildStages(OpBuilder &builder, ModuleOp module, const LayerChain &chain,
            const LayerChainCosts &costs, const PartitionOptions &options,
            ArrayRef<int> first, SmallVectorImpl<StageOp> &stages,
            SmallVectorImpl<func::FuncOp> &forwards) {
  SymbolTable symbols(module);
  const int64_t numStages = options.getNumStages();
  for (int64_t s = 0; s < numStages; ++s) {
    std::string base = options.pipelineName + "_s" + std::to_string(s);
    if (symbols.lookup(base) || symbols.lookup(base + "_fwd") ||
        symbols.lookup(base + "_bwd"))
      return mlir::emitError(chain.func->getLoc(), "symbol '")
             << base << "' already exists";
    func::FuncOp fwd = buildStageForward(builder, chain, first[s], first[s + 1],
                                         base + "_fwd");
    std::optional<StageBackward> bwd;
    if (!options.forwardOnly) {
      StageBackwardOptions backwardOptions;
      backwardOptions.first = s == 0;
      backwardOptions.last = s + 1 == numStages;
      // Each micro-batch's mean loss over M x D: summed over the
      // micro-batches and then over the replicas, the gradient of the
      // mini-batch mean.
      backwardOptions.lossScale =
          1.0 / (static_cast<double>(options.microbatches) *
                 static_cast<double>(options.replicas));
      backwardOptions.remat = options.remat;
      backwardOptions.recomputeLayers = options.recomputeLayers;
      backwardOptions.split = options.splitBackward;
      FailureOr<StageBackward> built =
          buildStageBackward(fwd, base, backwardOptions);
      if (failed(built))
        return failure();
      bwd = *built;
    }
    builder.setInsertionPointAfter(bwd ? bwd->getLast() : fwd);
    const StageBackward *backward = bwd ? &*bwd : nullptr;
    StageTimes times = estimateStageTimes(chain, costs, first[s], first[s + 1],
                                          backward, options.replicas);
    stages.push_back(declareStage(builder, base, s, fwd, backward, times));
    forwards.push_back(fwd);
  }
  return success();
}

/// Drops each parameter of `module` that none of the stage `forwards` reads
/// (an ONNX initializer nothing consumes, a dropout ratio, an untied head):
/// no rank would train it. Warns at each.
static void dropUnreadParameters(ModuleOp module,
                                 ArrayRef<func::FuncOp> forwards) {
  llvm::DenseSet<StringRef> read;
  for (func::FuncOp fwd : forwards)
    fwd.walk([&](nn::ParamOp p) { read.insert(p.getName()); });
  for (nn::ParameterOp param :
       llvm::make_early_inc_range(module.getOps<nn::ParameterOp>())) {
    if (read.contains(param.getSymName()))
      continue;
    mlir::emitWarning(param.getLoc(), "parameter '")
        << param.getSymName()
        << "' is not used by the network; it is dropped (no stage trains it)";
    param.erase();
  }
}

namespace {
struct GPipePartitionPass
    : public mlir::gpipe::impl::GPipePartitionPassBase<GPipePartitionPass> {
  using GPipePartitionPassBase::GPipePartitionPassBase;
  void runOnOperation() override;

private:
  /// The pass options, checked, with the schedule's defaults filled in (all
  /// but the recompute layers, which need the network's). Errors at `func`.
  FailureOr<PartitionOptions> resolveOptions(func::FuncOp func);
};
} // namespace

FailureOr<PartitionOptions>
GPipePartitionPass::resolveOptions(func::FuncOp func) {
  Location loc = func.getLoc();
  const int64_t stages = this->stages, microbatches = this->microbatches;
  if (stages < 1)
    return mlir::emitError(loc, "expected at least 1 stage, got ") << stages;
  if (microbatches < 1)
    return mlir::emitError(loc, "expected at least 1 micro-batch, got ")
           << microbatches;
  const int64_t replicas = dataParallel;
  if (replicas < 1)
    return mlir::emitError(loc,
                           "expected at least 1 data-parallel replica, got ")
           << replicas;
  // Inference: GPipe's forward half, nothing trained.
  if (forwardOnly &&
      failed(checkForwardOnly(func, ScheduleKind(schedule), this->virtualStages,
                              replicas, splitBackward)))
    return failure();
  PartitionOptions options;
  options.pipelineName = pipelineName;
  options.ranks = stages;
  options.microbatches = microbatches;
  options.replicas = replicas;
  options.forwardOnly = forwardOnly;
  if (!(clipGradNorm >= 0) || !std::isfinite(clipGradNorm))
    return mlir::emitError(loc, "expected clip-grad-norm to be a finite "
                                "bound >= 0 (0: no clipping), got ")
           << clipGradNorm;
  if (forwardOnly && clipGradNorm > 0)
    return mlir::emitError(loc, "clip-grad-norm clips a training step's "
                                "gradients; an inference pipeline has none");
  options.clipGradNorm = clipGradNorm;
  options.optimizer = optimizer;
  // `custom`: the programs will be imported (gpipe-import-schedule); any
  // placement and split backwards may come, so every backward is split and
  // no family's shape applies.
  options.schedule = ScheduleKind(schedule);
  bool custom = options.schedule == ScheduleKind::Custom;
  // K ranks of V stages each: the network is cut into K·V stages.
  ScheduleFamily family = getScheduleFamily(options.schedule);
  int64_t virtualStages = this->virtualStages;
  if (virtualStages == 0)
    virtualStages = custom ? 1 : getDefaultVirtualStages(family);
  if (virtualStages < 1)
    return mlir::emitError(loc, "expected at least 1 virtual stage per "
                                "rank, got ")
           << virtualStages;
  auto clamp = [](int64_t value) {
    return static_cast<int>(std::min<int64_t>(value, INT32_MAX));
  };
  if (std::string error = custom ? std::string()
                                 : checkScheduleShape(family, clamp(stages),
                                                      clamp(virtualStages),
                                                      clamp(microbatches));
      !error.empty())
    return mlir::emitError(loc, error);
  options.virtualStages = virtualStages;
  options.splitBackward = splitBackward || custom || usesSplitBackward(family);
  // Inference keeps nothing for a backward.
  options.remat = forwardOnly ? Remat::None : Remat(remat);
  if (options.remat == Remat::Auto)
    return mlir::emitError(loc,
                           "remat auto is chosen by gpipe-compile (against "
                           "its --memory-budget); the partition takes none, "
                           "stage or selective with recompute-layers");
  if (!recomputeLayers.empty() && options.remat != Remat::Selective)
    return mlir::emitError(loc, "recompute-layers needs remat selective, "
                                "got remat ")
           << stringifyRemat(options.remat);
  return options;
}

void GPipePartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto func = module.lookupSymbol<func::FuncOp>(funcName);
  if (!func) {
    mlir::emitError(module.getLoc(), "gpipe-partition: no function '")
        << funcName << "'";
    return signalPassFailure();
  }
  FailureOr<PartitionOptions> options = resolveOptions(func);
  if (failed(options))
    return signalPassFailure();
  FailureOr<LayerChain> chain = readLayerChain(func);
  if (failed(chain) || failed(checkStageCount(*chain, *options)))
    return signalPassFailure();
  FailureOr<SmallVector<StringAttr>> recomputed =
      findLayers(*chain, ArrayRef<std::string>(recomputeLayers));
  if (failed(recomputed))
    return signalPassFailure();
  options->recomputeLayers = std::move(*recomputed);

  DeviceProfile device = getProfile(profile);
  if (!machineFile.empty()) {
    // Measured kernel rates of this machine (gpipe-calibrate): for the CPU
    // profile only, where the kernels it timed run.
    if (profile != ProfileKind::CPU) {
      mlir::emitError(func.getLoc(), "a machine profile ('")
          << machineFile << "') times the CPU kernels; profile '" << device.name
          << "' is of another device";
      return signalPassFailure();
    }
    std::string error;
    std::shared_ptr<const MachineModel> machine =
        MachineModel::load(machineFile, error);
    if (!machine) {
      mlir::emitError(func.getLoc(), error);
      return signalPassFailure();
    }
    device = withMachine(device, std::move(machine),
                         options->ranks * options->replicas, gemm);
  }
  FailureOr<LayerChainCosts> costs =
      estimateLayerCosts(*chain, device, *options, profileFile);
  if (failed(costs))
    return signalPassFailure();
  // No memory budget means no cap; one given empty is an error.
  std::optional<StringRef> budget;
  if (!memoryBudget.empty() || memoryBudget.getNumOccurrences() > 0)
    budget = StringRef(memoryBudget);
  FailureOr<std::vector<int>> first = chooseStageBoundaries(
      *chain, *costs, *options, ArrayRef<int64_t>(balance), budget);
  // A parameter read on two stages would need its gradients synchronized.
  if (failed(first) || failed(checkParameterOwners(*chain, *first)))
    return signalPassFailure();

  // Build the stages after the network function, then the pipeline.
  OpBuilder builder(module.getContext());
  builder.setInsertionPointAfter(func);
  SmallVector<StageOp> stageOps;
  SmallVector<func::FuncOp> forwards;
  if (failed(buildStages(builder, module, *chain, *costs, *options, *first,
                         stageOps, forwards)))
    return signalPassFailure();
  declarePipeline(builder, func.getLoc(), *options, stageOps);
  // A parameter no stage reads would be trained by no rank.
  dropUnreadParameters(module, forwards);
}
