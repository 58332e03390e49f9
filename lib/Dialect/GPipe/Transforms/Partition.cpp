//===- Partition.cpp - Cut a layered network into pipeline stages ---------===//
//
// Implements `gpipe-partition`: reads the chain of nn.layer ops of the
// network function, estimates each layer with the cost model, partitions
// the chain into K contiguous stages (exactly, or by a manual balance), and
// builds the per-stage forward and backward functions (the backward
// recomputes the forward under remat=stage, and reads the values the forward
// saved under remat=none), the gpipe.stage declarations and an empty
// gpipe.pipeline for a schedule to fill.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Partition.h"
#include "gpipe/Analysis/CostModel.h"
#include "gpipe/Analysis/MeasuredProfile.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPEPARTITIONPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

namespace {

/// The network as the partitioner sees it: a chain of layers, then the loss.
struct Network {
  func::FuncOp func;
  SmallVector<nn::LayerOp> layers;
  /// Ops after the last layer (the loss); they join the last stage.
  SmallVector<Operation *> tail;
  /// Arguments the tail reads that no layer does (the labels).
  SmallVector<BlockArgument> tailArgs;
};

} // namespace

/// Checks that `func` is a chain of single-input layers and splits it.
static FailureOr<Network> analyzeNetwork(func::FuncOp func) {
  Network net{func, {}, {}, {}};
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
      if (!net.tail.empty())
        return mlir::emitError(layer.getLoc(), "layer '")
                   << layer.getName()
                   << "' follows non-layer ops; expected the loss last",
               failure();
      net.layers.push_back(layer);
      continue;
    }
    if (net.layers.empty())
      return mlir::emitError(
                 op.getLoc(),
                 "this op comes before the network's first layer and belongs "
                 "to none; every op before the loss must be in an nn.layer"),
             failure();
    net.tail.push_back(&op);
  }

  for (auto [i, layer] : llvm::enumerate(net.layers)) {
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
    bool chained =
        i == 0 ? isa<BlockArgument>(in) : in == net.layers[i - 1].getResult(0);
    if (!chained)
      return mlir::emitError(layer.getLoc(), "layer '")
                 << layer.getName()
                 << "' does not take the previous layer's output",
             failure();
    // Only the next layer (or the tail, for the last) may use the output.
    for (Operation *user : layer.getResult(0).getUsers()) {
      bool ok = i + 1 < net.layers.size()
                    ? user == net.layers[i + 1].getOperation()
                    : !isa<nn::LayerOp>(user);
      if (!ok)
        return mlir::emitError(layer.getLoc(), "output of layer '")
                   << layer.getName() << "' skips the next layer",
               failure();
    }
  }
  Value first = net.layers.front().getInputs()[0];
  for (Operation *op : net.tail)
    for (Value v : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && arg != first && !llvm::is_contained(net.tailArgs, arg))
        net.tailArgs.push_back(arg);
  return net;
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
static int64_t paramBytesOf(nn::LayerOp layer, ModuleOp) {
  llvm::SmallDenseSet<StringRef, 8> seen;
  int64_t bytes = 0;
  layer.getBodyBlock().walk([&](nn::ParamOp p) {
    if (seen.insert(p.getName()).second)
      bytes += nn::tensorBytes(p.getType());
  });
  return bytes;
}

/// Builds `name`: layers [begin, end) of `net` (plus the tail when `last`)
/// as a function of the stage input (plus the tail's arguments).
static func::FuncOp buildStageForward(OpBuilder &builder, Network &net,
                                      size_t begin, size_t end, bool last,
                                      StringRef name) {
  Location loc = net.layers[begin].getLoc();
  SmallVector<Type> inputs{net.layers[begin].getInputs()[0].getType()};
  if (last)
    for (BlockArgument arg : net.tailArgs)
      inputs.push_back(arg.getType());
  Type output =
      last && !net.tail.empty()
          ? net.func.getBody().front().getTerminator()->getOperand(0).getType()
          : net.layers[end - 1].getResult(0).getType();
  auto func = func::FuncOp::create(builder, loc, name,
                                   builder.getFunctionType(inputs, output));
  Block *entry = func.addEntryBlock();
  IRMapping mapping;
  mapping.map(net.layers[begin].getInputs()[0], entry->getArgument(0));
  if (last)
    for (auto [i, arg] : llvm::enumerate(net.tailArgs))
      mapping.map(arg, entry->getArgument(i + 1));
  OpBuilder body = OpBuilder::atBlockEnd(entry);
  for (size_t i = begin; i < end; ++i)
    body.clone(*net.layers[i], mapping);
  Value result = mapping.lookup(net.layers[end - 1].getResult(0));
  if (last) {
    for (Operation *op : net.tail)
      body.clone(*op, mapping);
    if (!net.tail.empty())
      result = mapping.lookup(
          net.func.getBody().front().getTerminator()->getOperand(0));
  }
  func::ReturnOp::create(body, loc, result);
  return func;
}

/// Reads the profile at `path` for the network `net` of `func` run by
/// `workers` ranks under the remat policy `remat` and the schedule
/// `schedule`: fills `costInput`'s measured per-layer times (estimated
/// from the sizes it has when it lacks this one) and `device`'s link, and
/// `out` with the times for this pipeline's micro-batch size and ranks. Errors
/// (no file, no profile, a layer it lacks) are emitted.
static LogicalResult readMeasuredProfile(StringRef path, func::FuncOp func,
                                         const Network &net, int64_t workers,
                                         StringRef remat, StringRef schedule,
                                         std::optional<ProfileMeasurement> &out,
                                         CostModelInput &costInput,
                                         DeviceProfile &device) {
  std::string error;
  std::optional<MeasuredProfile> profile =
      MeasuredProfile::read(path.str(), error);
  if (!profile)
    return mlir::emitError(func.getLoc(), error);
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
  for (nn::LayerOp layer : net.layers) {
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

namespace {
struct GPipePartitionPass
    : public mlir::gpipe::impl::GPipePartitionPassBase<GPipePartitionPass> {
  using GPipePartitionPassBase::GPipePartitionPassBase;
  void runOnOperation() override;
};
} // namespace

void GPipePartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  const int64_t stages = this->stages, microbatches = this->microbatches;
  auto fail = [&] { signalPassFailure(); };
  auto func = module.lookupSymbol<func::FuncOp>(funcName);
  if (!func) {
    mlir::emitError(module.getLoc(), "gpipe-partition: no function '")
        << funcName << "'";
    return fail();
  }
  if (stages < 1) {
    mlir::emitError(func.getLoc(), "expected at least 1 stage, got ") << stages;
    return fail();
  }
  if (microbatches < 1) {
    mlir::emitError(func.getLoc(), "expected at least 1 micro-batch, got ")
        << microbatches;
    return fail();
  }
  const int64_t replicas = dataParallel;
  if (replicas < 1) {
    mlir::emitError(func.getLoc(),
                    "expected at least 1 data-parallel replica, got ")
        << replicas;
    return fail();
  }
  // Inference: GPipe's forward half, nothing trained.
  if (forwardOnly) {
    if (ScheduleKind(schedule) != ScheduleKind::GPipe ||
        (this->virtualStages != 0 && this->virtualStages != 1) ||
        dataParallel != 1 || splitBackward) {
      mlir::emitError(func.getLoc(),
                      "a forward-only pipeline runs GPipe's forward half: "
                      "expected schedule gpipe with one stage per rank, one "
                      "replica and no split backward");
      return fail();
    }
    bool hasLoss = false;
    func.walk([&](Operation *op) {
      hasLoss |= isa<nn::CrossEntropyOp, nn::MSEOp>(op);
    });
    if (hasLoss) {
      mlir::emitError(func.getLoc(),
                      "a forward-only pipeline computes no loss, but the "
                      "network has one attached");
      return fail();
    }
  }
  // `custom`: the programs will be imported (gpipe-import-schedule); any
  // placement and split backwards may come, so every backward is split and
  // no family's shape applies.
  std::optional<ScheduleKind> scheduleKind = ScheduleKind(schedule);
  bool custom = *scheduleKind == ScheduleKind::Custom;
  // K ranks of V stages each: the network is cut into K·V stages.
  ScheduleFamily family = getScheduleFamily(*scheduleKind);
  int64_t virtualStages = this->virtualStages;
  if (virtualStages == 0)
    virtualStages = custom ? 1 : getDefaultVirtualStages(family);
  if (virtualStages < 1) {
    mlir::emitError(func.getLoc(), "expected at least 1 virtual stage per "
                                   "rank, got ")
        << virtualStages;
    return fail();
  }
  if (std::string error =
          custom ? std::string()
                 : checkScheduleShape(
                       family,
                       static_cast<int>(std::min<int64_t>(stages, INT32_MAX)),
                       static_cast<int>(
                           std::min<int64_t>(virtualStages, INT32_MAX)),
                       static_cast<int>(
                           std::min<int64_t>(microbatches, INT32_MAX)));
      !error.empty()) {
    mlir::emitError(func.getLoc(), error);
    return fail();
  }
  const int64_t ranks = stages;
  const int64_t numStages = ranks * virtualStages;
  bool split = splitBackward || custom || usesSplitBackward(family);
  // Inference keeps nothing for a backward.
  std::optional<Remat> rematKind = forwardOnly ? Remat::None : Remat(remat);
  if (*rematKind == Remat::Auto) {
    mlir::emitError(func.getLoc(),
                    "remat auto is chosen by gpipe-compile (against its "
                    "--memory-budget); the partition takes none, stage or "
                    "selective with recompute-layers");
    return fail();
  }
  if (!recomputeLayers.empty() && *rematKind != Remat::Selective) {
    mlir::emitError(func.getLoc(), "recompute-layers needs remat selective, "
                                   "got remat ")
        << stringifyRemat(*rematKind);
    return fail();
  }
  std::optional<DeviceProfile> device = getProfile(profile);
  FailureOr<Network> net = analyzeNetwork(func);
  if (failed(net))
    return fail();
  int64_t numLayers = net->layers.size();
  if (numStages > numLayers) {
    InFlightDiagnostic diag = mlir::emitError(func.getLoc(), "cannot cut ")
                              << numLayers << " layers into " << numStages
                              << " stages";
    if (virtualStages > 1)
      diag << " (" << ranks << " ranks x " << virtualStages
           << " virtual stages)";
    return fail();
  }

  // Selective: the layers to recompute, each a layer of the network.
  SmallVector<StringAttr> recomputed;
  for (const std::string &name : recomputeLayers) {
    auto it = llvm::find_if(net->layers, [&](nn::LayerOp layer) {
      return layer.getName() == name;
    });
    if (it == net->layers.end()) {
      InFlightDiagnostic diag =
          mlir::emitError(func.getLoc(), "recompute-layers names '")
          << name
          << "', which is no layer of the "
             "network; its layers are";
      for (nn::LayerOp layer : net->layers)
        diag << " " << layer.getName();
      return fail();
    }
    recomputed.push_back((*it).getNameAttr());
  }

  // Cost model: one micro-batch per layer.
  CostModelInput costInput;
  costInput.rematerialize = !forwardOnly && *rematKind == Remat::Stage;
  for (nn::LayerOp layer : net->layers)
    costInput.rematerializeLayer.push_back(
        !forwardOnly && (*rematKind == Remat::Stage ||
                         llvm::is_contained(recomputed, layer.getNameAttr())));
  PartitionProblem problem;
  problem.numStages = static_cast<int>(numStages);
  for (nn::LayerOp layer : net->layers) {
    nn::OpCost c = layer.getCost();
    costInput.layers.push_back(
        {c.flops, c.bytesRead, c.bytesWritten, c.paramBytes});
    costInput.outputBytes.push_back(nn::tensorBytes(layer.getType(0)));
    // Weights and their gradient accumulator, plus one micro-batch of the
    // layer's activations; the memory planner refines this estimate.
    int64_t scratch = 0;
    layer.getBodyBlock().walk([&](Operation *op) {
      for (Value r : op->getResults())
        scratch += nn::tensorBytes(r.getType());
    });
    problem.layerMemory.push_back(
        (forwardOnly ? 1 : 2) * paramBytesOf(layer, module) + scratch);
  }
  // A measured profile replaces the estimates.
  std::optional<ProfileMeasurement> measuredInput;
  if (!profileFile.empty() &&
      failed(readMeasuredProfile(profileFile, func, *net, ranks * replicas,
                                 stringifyRemat(*rematKind),
                                 stringifyScheduleKind(*scheduleKind),
                                 measuredInput, costInput, *device)))
    return fail();
  const ProfileMeasurement *measured =
      measuredInput ? &*measuredInput : nullptr;
  auto overheadOf = [&](const char *kind) {
    if (!measured)
      return 0.0;
    auto it = measured->actionOverhead.find(kind);
    return it == measured->actionOverhead.end() ? 0.0 : it->second;
  };
  LayerCosts costs = computeLayerCosts(costInput, *device);
  if (!costs.ok()) {
    mlir::emitError(func.getLoc(), "cost model: ") << costs.error;
    return fail();
  }
  problem.layerTime = forwardOnly ? costs.forward : costs.total;
  problem.boundaryTime = costs.boundary;
  if (memoryBudget.empty() && memoryBudget.getNumOccurrences() > 0) {
    mlir::emitError(func.getLoc(), kEmptyMemoryBudget);
    return fail();
  }
  if (!memoryBudget.empty()) {
    std::optional<int64_t> budget = parseBytes(memoryBudget);
    if (!budget) {
      mlir::emitError(func.getLoc(), "cannot read memory budget '")
          << memoryBudget << "' (expected a size such as 16GiB)";
      return fail();
    }
    problem.memoryBudget = budget;
  }
  PartitionResult result;
  if (!balance.empty()) {
    std::vector<int> manual(balance.begin(), balance.end());
    if (static_cast<int64_t>(manual.size()) != numStages) {
      mlir::emitError(func.getLoc(), "balance lists ")
          << manual.size() << " stages but the pipeline has " << numStages;
      return fail();
    }
    result = partitionManual(problem, manual);
  } else {
    result = partitionOptimal(problem);
  }
  if (!result.ok()) {
    InFlightDiagnostic diag = mlir::emitError(func.getLoc(), result.error);
    if (result.smallestFeasibleBudget &&
        !StringRef(result.error).contains("smallest budget"))
      diag.attachNote() << "the smallest budget that fits is "
                        << formatBytes(*result.smallestFeasibleBudget);
    return fail();
  }
  const std::vector<int> &first = result.partition.firstLayer;

  // A parameter read on two stages would need its gradients synchronized.
  llvm::StringMap<int64_t> owner;
  for (int64_t s = 0; s < numStages; ++s)
    for (int l = first[s]; l < first[s + 1]; ++l)
      for (StringRef name : paramsOf(net->layers[l])) {
        auto [it, inserted] = owner.try_emplace(name, s);
        if (!inserted && it->second != s) {
          mlir::emitError(net->layers[l].getLoc(), "parameter '")
              << name << "' is shared by stages " << it->second << " and " << s
              << "; give each layer that reads it a copy of its own first "
                 "(nn-copy-tied-parameters, which gpipe-compile runs)";
          return fail();
        }
      }

  // Build the stages after the network function.
  SymbolTable symbols(module);
  OpBuilder builder(module.getContext());
  builder.setInsertionPointAfter(func);
  SmallVector<Attribute> stageRefs;
  SmallVector<func::FuncOp> stageForwards;
  for (int64_t s = 0; s < numStages; ++s) {
    bool last = s + 1 == numStages;
    std::string base = pipelineName + "_s" + std::to_string(s);
    if (symbols.lookup(base) || symbols.lookup(base + "_fwd") ||
        symbols.lookup(base + "_bwd")) {
      mlir::emitError(func.getLoc(), "symbol '") << base << "' already exists";
      return fail();
    }
    func::FuncOp fwd = buildStageForward(builder, *net, first[s], first[s + 1],
                                         last, base + "_fwd");
    if (forwardOnly) {
      double forwardTime = overheadOf("forward");
      for (int l = first[s]; l < first[s + 1]; ++l)
        forwardTime += costs.forward[l];
      FunctionType type = fwd.getFunctionType();
      builder.setInsertionPointAfter(fwd);
      auto stage = StageOp::create(
          builder, fwd.getLoc(), builder.getStringAttr(base),
          builder.getI64IntegerAttr(s), TypeAttr::get(type.getInput(0)),
          TypeAttr::get(type.getResult(0)), FlatSymbolRefAttr::get(fwd),
          FlatSymbolRefAttr(), FlatSymbolRefAttr(), FlatSymbolRefAttr(),
          builder.getF64FloatAttr(forwardTime), FloatAttr(), FloatAttr(),
          FloatAttr(), FloatAttr(), FloatAttr());
      builder.setInsertionPointAfter(stage);
      stageRefs.push_back(FlatSymbolRefAttr::get(stage));
      stageForwards.push_back(fwd);
      continue;
    }
    nn::BackwardOptions options;
    // Each micro-batch's mean loss over M x D: summed over the micro-batches
    // and then over the replicas, the gradient of the mini-batch mean.
    if (last)
      options.lossScale = 1.0 / (static_cast<double>(microbatches) *
                                 static_cast<double>(replicas));
    // remat=none: the forward also returns what the backward reads.
    options.saveActivations = *rematKind != Remat::Stage;
    options.recomputeLayers = recomputed;
    SmallVector<Operation *> recomputed;
    options.recomputed = &recomputed;
    FailureOr<func::FuncOp> bwd =
        nn::buildBackwardFunction(fwd, base + "_bwd", options);
    if (failed(bwd))
      return fail();
    // The set is only compared against the ops still in the body (nothing
    // is created in between, so an erased op's address is not reused).
    llvm::DenseSet<Operation *> recomputedSet(recomputed.begin(),
                                              recomputed.end());
    // Stage 0's input is the data; the last stage's other arguments are the
    // loss's (the labels, float under mse): neither has a gradient to send.
    dropInputGradients(*bwd, [&](int64_t arg) {
      return (s == 0 && arg == 0) || (last && arg > 0);
    });
    if (*rematKind != Remat::None && !recomputedSet.empty())
      wrapRecompute(*bwd, recomputedSet, *rematKind);
    builder.setInsertionPointAfter(*bwd);
    FlatSymbolRefAttr inputRef, weightRef;
    if (split) {
      FailureOr<nn::SplitBackward> halves = nn::splitBackwardFunction(
          *bwd, base + "_bwd_input", base + "_bwd_weight");
      if (failed(halves))
        return fail();
      inputRef = FlatSymbolRefAttr::get(halves->input);
      weightRef = FlatSymbolRefAttr::get(halves->weight);
      builder.setInsertionPointAfter(halves->weight);
    }

    double forwardTime = overheadOf("forward");
    double backwardTime = overheadOf("backward");
    for (int l = first[s]; l < first[s + 1]; ++l) {
      forwardTime += costs.forward[l];
      backwardTime += costs.backward[l] + costs.recompute[l];
    }
    // Measured halves of a split backward: the input half also recomputes.
    std::optional<std::pair<double, double>> measuredHalves;
    if (measured && split) {
      double in = overheadOf("backward_input");
      double w = overheadOf("backward_weight");
      bool all = true;
      for (int l = first[s]; l < first[s + 1] && all; ++l) {
        const MeasuredLayer *m = measured->findLayer(net->layers[l].getName());
        all = m->backwardInput && m->backwardWeight;
        if (all) {
          in += *m->backwardInput + costs.recompute[l];
          w += *m->backwardWeight;
        }
      }
      if (all)
        measuredHalves = {in, w};
    }
    // How the backward's time divides between its halves: in proportion to
    // the roofline times of their ops (the input half of a transformer
    // stage carries the attention and normalization gradients, the weight
    // half little more than the weight GEMMs; stage 0's input half is empty).
    FloatAttr inputTime, weightTime;
    if (split) {
      auto rooflineOf = [&](func::FuncOp half) {
        double seconds = 0;
        half.walk([&](nn::CostOpInterface op) {
          nn::OpCost c = op.getCost();
          seconds += mlir::gpipe::forwardTime(
              {c.flops, c.bytesRead, c.bytesWritten, c.paramBytes}, *device);
        });
        return seconds;
      };
      auto lookup = [&](FlatSymbolRefAttr ref) {
        return module.lookupSymbol<func::FuncOp>(ref.getValue());
      };
      if (measuredHalves) {
        inputTime = builder.getF64FloatAttr(measuredHalves->first);
        weightTime = builder.getF64FloatAttr(measuredHalves->second);
        backwardTime = measuredHalves->first + measuredHalves->second;
      } else {
        double in = rooflineOf(lookup(inputRef));
        double w = rooflineOf(lookup(weightRef));
        double share = in + w > 0 ? in / (in + w) : 0.5;
        inputTime = builder.getF64FloatAttr(backwardTime * share);
        weightTime = builder.getF64FloatAttr(backwardTime * (1 - share));
      }
    }
    // The optimizer's update, at the measured rate per parameter byte.
    FloatAttr stepTime;
    if (measured && measured->optimizerSecondsPerByte) {
      int64_t bytes = 0;
      for (int l = first[s]; l < first[s + 1]; ++l)
        bytes += paramBytesOf(net->layers[l], module);
      stepTime = builder.getF64FloatAttr(*measured->optimizerSecondsPerByte *
                                         double(bytes));
    }
    // The replicas' all-reduce of the stage's gradients.
    FloatAttr reduceTime;
    if (replicas > 1) {
      int64_t gradBytes = 0;
      for (int l = first[s]; l < first[s + 1]; ++l)
        gradBytes += paramBytesOf(net->layers[l], module);
      reduceTime =
          builder.getF64FloatAttr(allReduceTime(gradBytes, replicas, *device));
    }
    FunctionType type = fwd.getFunctionType();
    auto stage = StageOp::create(
        builder, fwd.getLoc(), builder.getStringAttr(base),
        builder.getI64IntegerAttr(s), TypeAttr::get(type.getInput(0)),
        TypeAttr::get(type.getResult(0)), FlatSymbolRefAttr::get(fwd),
        FlatSymbolRefAttr::get(*bwd), inputRef, weightRef,
        builder.getF64FloatAttr(forwardTime),
        builder.getF64FloatAttr(backwardTime), inputTime, weightTime,
        reduceTime, stepTime);
    stageRefs.push_back(FlatSymbolRefAttr::get(stage));
    stageForwards.push_back(fwd);
  }
  PipelineOp::create(
      builder, func.getLoc(), builder.getStringAttr(pipelineName),
      builder.getArrayAttr(stageRefs), builder.getI64IntegerAttr(microbatches),
      ScheduleKindAttr::get(module.getContext(), *scheduleKind),
      virtualStages > 1 ? builder.getI64IntegerAttr(virtualStages)
                        : IntegerAttr(),
      RematAttr::get(module.getContext(), *rematKind),
      replicas > 1 ? builder.getI64IntegerAttr(replicas) : IntegerAttr(),
      forwardOnly ? builder.getUnitAttr() : UnitAttr(), MemoryPlanAttr())
      .getBody()
      .emplaceBlock();

  // A parameter no stage reads (an ONNX initializer nothing consumes, a
  // dropout ratio, an untied head) would be trained by no rank: drop it,
  // saying so.
  llvm::DenseSet<StringRef> read;
  for (func::FuncOp fwd : stageForwards)
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
