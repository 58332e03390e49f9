//===- Metadata.cpp - What the runtime must know ---*- C++ -*-===//
//
// Part of the lowering's emitter; see Emitter.h.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"
#include "gpipe/Dialect/GPipe/Utils/ModelMetadata.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::lowering;
namespace key = ::gpipe::abi::key;

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

static llvm::json::Array toJSON(ArrayRef<int64_t> values) {
  llvm::json::Array array;
  for (int64_t v : values)
    array.push_back(v);
  return array;
}

/// The metadata's program of a block of actions and loops: an action is
/// {kind, stage, mb[, peer, direction, bytes, dtype]}; a loop is
/// {"loop": {lower, upper, body}} with the body's "mb" relative to the loop's
/// micro-batch. The runtime expands loops and derives each transfer's tag
/// from its boundary and micro-batch (gpipe::abi::getTransferTag).
llvm::json::Array Emitter::describeActions(Block &block) {
  llvm::json::Array entries;
  for (Operation &op : block) {
    if (auto loop = dyn_cast<ForOp>(op)) {
      entries.push_back(llvm::json::Object{
          {key::kLoop,
           llvm::json::Object{
               {key::kLower, loop.getLowerBound()},
               {key::kUpper, loop.getUpperBound()},
               {key::kBody, describeActions(loop.getBody().front())}}}});
      continue;
    }
    auto action = cast<ActionOpInterface>(op);
    ActionKind kind = action.getActionKind();
    llvm::json::Object entry{
        {key::kKind, ::gpipe::abi::getActionKindMetadataName(kind)},
        {key::kStage, pipeline.getStagePosition(action.getStageSymbol())},
        {key::kMicrobatch, action.getMicrobatchOffset()}};
    if (isTransferKind(kind)) {
      Type payload = isa<SendOp>(op) ? cast<SendOp>(op).getPayload()
                                     : cast<RecvOp>(op).getPayload();
      entry[key::kPeer] = action.getPeerRank();
      entry[key::kDirection] =
          ::gpipe::abi::getDirectionName(::gpipe::abi::getDirection(kind));
      entry[key::kBytes] = getPayloadBytes(payload);
      entry[key::kDType] = getPayloadDType(payload);
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::optional<Type> Emitter::getPredictionType(func::FuncOp lastForward) {
  if (pipeline.isForwardOnly())
    return lastForward.getFunctionType().getResult(0);
  std::optional<Type> type;
  lastForward.walk([&](Operation *op) {
    if (isa<nn::CrossEntropyOp, nn::MSEOp>(op) && !type &&
        isa<ShapedType>(op->getOperand(0).getType()))
      type = op->getOperand(0).getType();
  });
  return type;
}

/// A per-micro-batch type's shape over the whole mini-batch: M
/// micro-batches on each of the D replicas.
SmallVector<int64_t> Emitter::getBatchShape(Type type) {
  SmallVector<int64_t> shape(cast<ShapedType>(type).getShape());
  if (!shape.empty())
    shape[0] *= converted.schedule.numMicrobatches * pipeline.getNumReplicas();
  return shape;
}

/// The runtime's name of a tensor type's element type.
static std::string dtypeNameOf(Type type) {
  return std::string(::gpipe::rt::dtypeName(
      *getRuntimeDType(cast<ShapedType>(type).getElementType())));
}

/// The loss the last forward computes, if any, and for cross-entropy its
/// number of classes.
static std::optional<nn::LossKind> getLossKind(func::FuncOp lastForward,
                                               int64_t &classes) {
  std::optional<nn::LossKind> loss;
  lastForward.walk([&](Operation *op) {
    if (auto ce = dyn_cast<nn::CrossEntropyOp>(op)) {
      loss = nn::LossKind::CrossEntropy;
      classes = shapeOf(ce.getLogits()).back();
    } else if (isa<nn::MSEOp>(op)) {
      loss = nn::LossKind::MSE;
    }
  });
  return loss;
}

/// The run's identity: format, versions, where the model came from, what
/// it targets, and the pipeline's shape.
void Emitter::describeRun(llvm::json::Object &root) {
  const Schedule &schedule = converted.schedule;
  int K = schedule.numStages, M = schedule.numMicrobatches;
  const int64_t D = pipeline.getNumReplicas();
  root[key::kFormat] = ::gpipe::abi::kMetadataFormat;
  root[key::kSchemaVersion] = ::gpipe::abi::kMetadataSchemaVersion;
  root[key::kAbiVersion] = GPIPE_RT_ABI_VERSION;
  root["producer"] = "gpipe-compile 0.1";
  root["source"] = source;
  root[key::kTarget] = gpipe::getTargetName(target);
  root[key::kPrecision] = getPrecisionName(precision);
  if (gemmChoice) {
    llvm::json::Object gemm;
    gemm[key::kGemmImpl] = gpipe_rt_gemm_impl_name(gemmChoice->impl);
    if (!gemmChoice->grid.empty()) {
      gemm[key::kGemmGrid] = llvm::json::Array(gemmChoice->grid);
      llvm::json::Object cells;
      static const char *const layouts[4] = {"NN", "NT", "TN", "TT"};
      for (size_t layout = 0; layout < 4; ++layout)
        if (!gemmChoice->cells[layout].empty())
          cells[layouts[layout]] = gemmChoice->cells[layout];
      gemm[key::kGemmCells] = std::move(cells);
    }
    root[key::kGemm] = std::move(gemm);
  }
  root[key::kStages] = K;
  root[key::kMicrobatches] = M;
  if (D > 1)
    root["data_parallel"] = D;
  root[key::kSchedule] = stringifyScheduleKind(pipeline.getSchedule()).str();
  root[key::kRemat] = stringifyRemat(pipeline.getRemat()).str();
  root[key::kAlignment] = memory.getAlignment();
  root[key::kOptimizer] = ::gpipe::abi::getOptimizerName(memory.getOptimizer());
  if (std::optional<double> clip = pipeline.getClipBound())
    root[key::kClipGradNorm] = *clip;
}

/// The input the data provides for the whole mini-batch, and the model
/// inputs packed into it.
LogicalResult Emitter::describeInput(llvm::json::Object &root) {
  func::FuncOp firstForward = forwards.front().source;
  Location loc = pipeline.getLoc();
  Type inputType = firstForward.getFunctionType().getInput(0);
  if (failed(getRuntimeDType(cast<ShapedType>(inputType).getElementType())))
    return mlir::emitError(loc) << "unsupported input type " << inputType,
           failure();
  llvm::json::Object input{{"shape", toJSON(getBatchShape(inputType))},
                           {key::kDType, dtypeNameOf(inputType)}};
  // Several model inputs packed into one (nn-pack-inputs): each by name.
  if (auto parts =
          pipeline->getParentOfType<ModuleOp>()->getAttrOfType<ArrayAttr>(
              nn::kInputPartsAttrName)) {
    llvm::json::Array list;
    for (auto part : parts.getAsRange<DictionaryAttr>()) {
      auto name = part.getAs<StringAttr>("name");
      auto type = part.getAs<TypeAttr>("type");
      auto offset = part.getAs<IntegerAttr>("offset");
      if (!name || !type || !offset)
        return mlir::emitError(loc)
               << "malformed " << nn::kInputPartsAttrName << " entry " << part;
      list.push_back(llvm::json::Object{
          {"name", name.getValue().str()},
          // The network's own input type: the whole mini-batch already.
          {"shape", toJSON(cast<ShapedType>(type.getValue()).getShape())},
          {"offset", offset.getInt()}});
    }
    // One input keeps its shape; its name lets a data file use it.
    if (list.size() == 1)
      input["name"] = cast<DictionaryAttr>(parts[0])
                          .getAs<StringAttr>("name")
                          .getValue()
                          .str();
    else
      input["parts"] = std::move(list);
  }
  root["input"] = std::move(input);
  return success();
}

/// The loss, the prediction a run may save (gpipe_rt_report_output) and
/// the labels, over the whole mini-batch.
LogicalResult Emitter::describeTargets(llvm::json::Object &root) {
  func::FuncOp lastForward = forwards.back().source;
  Location loc = pipeline.getLoc();
  int64_t classes = 0;
  std::optional<nn::LossKind> loss = getLossKind(lastForward, classes);
  root["loss"] = loss ? nn::getLossName(*loss) : "";
  // What a run may save as its outputs (gpipe_rt_report_output): the last
  // stage's prediction over the mini-batch, the logits the loss reads in
  // training.
  root["mode"] = pipeline.isForwardOnly() ? "inference" : "train";
  if (std::optional<Type> prediction = getPredictionType(lastForward)) {
    if (failed(getRuntimeDType(cast<ShapedType>(*prediction).getElementType())))
      return mlir::emitError(loc) << "unsupported output type " << *prediction,
             failure();
    root["output"] =
        llvm::json::Object{{"shape", toJSON(getBatchShape(*prediction))},
                           {key::kDType, dtypeNameOf(*prediction)}};
  } else {
    root["output"] = nullptr;
  }
  FunctionType lastType = lastForward.getFunctionType();
  if (lastType.getNumInputs() > 1) {
    Type labelType = lastType.getInput(1);
    llvm::json::Object labels{{"shape", toJSON(getBatchShape(labelType))},
                              {key::kDType, dtypeNameOf(labelType)}};
    if (classes > 0)
      labels["classes"] = classes;
    root["labels"] = std::move(labels);
  } else {
    root["labels"] = nullptr;
  }
  return success();
}

/// The vocabulary of token inputs and what kind of data the model reads:
/// what gpipe-run's built-in data generates for it.
void Emitter::describeDataHint(llvm::json::Object &root) {
  func::FuncOp firstForward = forwards.front().source;
  Type inputType = firstForward.getFunctionType().getInput(0);
  int64_t classes = 0;
  bool crossEntropy = getLossKind(forwards.back().source, classes) ==
                      nn::LossKind::CrossEntropy;
  // The input itself, seen through the layers' block arguments.
  std::function<bool(Value)> isInput = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg)
      return false;
    if (arg.getOwner()->getParentOp() == firstForward.getOperation())
      return arg.getArgNumber() == 0;
    if (auto layer = dyn_cast<nn::LayerOp>(arg.getOwner()->getParentOp()))
      return isInput(layer.getInputs()[arg.getArgNumber()]);
    return false;
  };
  int64_t vocab = 0;
  firstForward.walk([&](nn::GatherOp gather) {
    if (!vocab && gather.getData().getDefiningOp<nn::ParamOp>() &&
        isInput(gather.getIndices()))
      vocab = shapeOf(gather.getData()).front();
  });
  // Token ids that index an embedding (not positions from a constant).
  if (!vocab) {
    firstForward.walk([&](nn::GatherOp gather) {
      if (!vocab && gather.getData().getDefiningOp<nn::ParamOp>() &&
          !gather.getIndices().getDefiningOp<nn::ConstantOp>())
        vocab = shapeOf(gather.getData()).front();
    });
  }
  bool tokens = cast<ShapedType>(inputType).getElementType().isInteger(64);
  root["vocab"] = tokens ? vocab : 0;
  std::string hint;
  if (tokens && crossEntropy && vocab > 0)
    hint = "text-char";
  else if (!tokens && crossEntropy &&
           cast<ShapedType>(inputType).getRank() == 2)
    hint = "classification";
  else if (!tokens && crossEntropy &&
           cast<ShapedType>(inputType).getRank() == 4)
    hint = "images";
  root["data_hint"] = hint;
}

/// The predicted step from the cost model: bubble, makespan, per-rank
/// timeline and busy time.
llvm::json::Object Emitter::describePrediction() {
  const Schedule &schedule = converted.schedule;
  int K = schedule.numStages, M = schedule.numMicrobatches;
  // Predicted timeline. closed_form_bubble keeps its meaning, GPipe's
  // (K-1)/(M+K-1); schedule_closed_form_bubble is the pipeline's own
  // schedule's, null where it has none.
  Timeline timeline = simulate(schedule, getStageDurations(converted.stages),
                               getSendBuffering(pipeline));
  std::optional<double> ownClosedForm =
      getScheduleClosedFormBubble(pipeline, converted.stages);
  return llvm::json::Object{
      {"bubble", timeline.error.empty() ? timeline.bubbleFraction : -1.0},
      {"closed_form_bubble", getIdealBubbleFraction(K, M)},
      {"schedule_closed_form_bubble", ownClosedForm
                                          ? llvm::json::Value(*ownClosedForm)
                                          : llvm::json::Value(nullptr)},
      {"step_seconds", timeline.makespan},
      {"timeline",
       [&]() -> llvm::json::Value {
         // Per rank, [start, end] of every action of the expanded program
         // in microseconds: what `gpipe-run --trace X.svg` draws above the
         // measured step. Left out of very long programs.
         size_t actions = 0;
         for (const auto &rank : timeline.ranks)
           actions += rank.size();
         if (!timeline.error.empty() || actions > 200000)
           return nullptr;
         llvm::json::Array ranks;
         for (const auto &rank : timeline.ranks) {
           llvm::json::Array times;
           for (const TimedAction &t : rank) {
             times.push_back(std::round(t.start * 1e8) / 100);
             times.push_back(std::round(t.end * 1e8) / 100);
           }
           ranks.push_back(std::move(times));
         }
         return ranks;
       }()},
      {"busy_seconds", [&] {
         // Per rank: the compute time of one step (F, B, I, W, R, step).
         llvm::json::Array busy;
         if (timeline.error.empty())
           for (double seconds : timeline.busyWithSteps)
             busy.push_back(seconds);
         return busy;
       }()}};
}

/// The parameters, with their initial values appended to `data` (what
/// gpipe_model_data returns).
LogicalResult Emitter::describeParameters(llvm::json::Object &root,
                                          std::string &data) {
  // Parameters and their initial data.
  llvm::json::Array parameters;
  for (nn::ParameterOp p : module.getBody()->getOps<nn::ParameterOp>()) {
    auto type = cast<RankedTensorType>(p.getType());
    llvm::json::Object entry{{"name", p.getSymName().str()},
                             {"shape", toJSON(type.getShape())},
                             {key::kDType, "f32"}};
    if (evaluation) {
      // The training pipeline's values, in the arena both share.
      entry["init"] = "shared";
    } else if (FlatSymbolRefAttr first = p.getTiedToAttr()) {
      entry["init"] = "tied";
      entry["tied_to"] = first.getValue().str();
    } else if (std::optional<ElementsAttr> value = p.getInitialValue()) {
      if (!cast<ShapedType>(value->getType()).getElementType().isF32())
        return p.emitOpError("initial value must be f32"), failure();
      FailureOr<std::vector<char>> bytes =
          nn::getElementsBytes(*value, [&] { return p.emitOpError(); });
      if (failed(bytes))
        return failure();
      while (data.size() % 64)
        data.push_back('\0');
      entry["init"] = "data";
      entry["data_offset"] = int64_t(data.size());
      data.append(bytes->data(), bytes->size());
    } else {
      entry["init"] =
          p.getInit() ? nn::stringifyInitKind(*p.getInit()).str() : "zeros";
      entry["scale"] =
          p.getInitScale() ? p.getInitScale()->convertToDouble() : 0.0;
    }
    parameters.push_back(std::move(entry));
  }
  root["parameters"] = std::move(parameters);
  return success();
}

/// Per stage: its rank, name and layers.
llvm::json::Array Emitter::describeStages() {
  const Schedule &schedule = converted.schedule;
  ArrayRef<StageOp> stages = converted.stages;
  llvm::json::Array stageInfo;
  for (size_t s = 0; s < stages.size(); ++s) {
    StageOp stage = stages[s];
    llvm::json::Array layers;
    if (!forwards[s].source.isExternal())
      for (auto layer :
           forwards[s].source.getBody().front().getOps<nn::LayerOp>())
        layers.push_back(layer.getName().str());
    stageInfo.push_back(
        llvm::json::Object{{"index", int64_t(s)},
                           {"rank", schedule.getRankOfStage(int(s))},
                           {"name", stage.getSymName().str()},
                           {"layers", std::move(layers)}});
  }
  return stageInfo;
}

/// Per rank: its arena, its stages' parameter placement and its program.
llvm::json::Array Emitter::describeRanks() {
  const Schedule &schedule = converted.schedule;
  int M = schedule.numMicrobatches;
  const int64_t D = pipeline.getNumReplicas();
  llvm::json::Array ranks;
  for (ProgramOp program : pipeline.getPrograms()) {
    int r = static_cast<int>(program.getRankIndex());
    ArenaAttr arena = program.getArenaAttr();
    llvm::json::Array rankStages;
    for (int s : schedule.getStagesOfRank(r)) {
      auto offsetOf = [&](SlotKind kind) -> int64_t {
        SlotAttr slot = arena.lookup(kind, s);
        return slot ? slot.getOffset() : -1;
      };
      llvm::json::Array params;
      for (auto &[name, placement] : stageParams[s].params)
        params.push_back(llvm::json::Object{{"name", name.str()},
                                            {"offset", placement.first},
                                            {"elements", placement.second}});
      // The step updates the running statistics from the sums of the whole
      // mini-batch: M micro-batches on each of the D replicas.
      llvm::json::Array runningStats;
      for (const RunningStats &stats : stageParams[s].runningStats)
        runningStats.push_back(llvm::json::Object{
            {"mean", stageParams[s].params.lookup(stats.mean).first},
            {"var", stageParams[s].params.lookup(stats.var).first},
            {"channels", stats.channels},
            {"count", stats.countPerMicrobatch * M * D},
            {"momentum", stats.momentum}});
      rankStages.push_back(llvm::json::Object{
          {key::kStage, s},
          {"trainable_bytes", stageParams[s].trainableBytes},
          {"running_stats", std::move(runningStats)},
          {"params_offset", offsetOf(SlotKind::Parameters)},
          {"grads_offset", offsetOf(SlotKind::Gradients)},
          {"state_offset", offsetOf(SlotKind::OptimizerState)},
          {"param_bytes", stageParams[s].bytes},
          {"params", std::move(params)}});
    }
    ranks.push_back(llvm::json::Object{
        {"rank", r},
        {"symbol", getRankSymbol(r)},
        {"arena_bytes", arena.getSize()},
        {"peak_bytes", arena.getPeak()},
        {"peak_kept_bytes", arena.getBreakdown().getKept()},
        {key::kStages, std::move(rankStages)},
        {key::kActions, describeActions(program.getBody().front())}});
  }
  return ranks;
}

/// The exported accessors: the parameters' initial data and the ABI
/// version.
void Emitter::emitAccessors(StringRef data) {
  Location loc = pipeline.getLoc();
  OpBuilder at(ctx);
  at.setInsertionPointToEnd(module.getBody());
  auto dataFunc = func::FuncOp::create(at, loc, "gpipe_model_data",
                                       FunctionType::get(ctx, {}, {ptrTy}));
  at.setInsertionPointToStart(dataFunc.addEntryBlock());
  func::ReturnOp::create(at, loc,
                         Value(gpipe_rt::BytesOp::create(at, loc, data)));
  at.setInsertionPointToEnd(module.getBody());
  auto version = func::FuncOp::create(at, loc, "gpipe_model_abi_version",
                                      FunctionType::get(ctx, {}, {i32Ty}));
  at.setInsertionPointToStart(version.addEntryBlock());
  func::ReturnOp::create(at, loc, constI32(at, loc, GPIPE_RT_ABI_VERSION));
}

LogicalResult Emitter::emitMetadata() {
  llvm::json::Object root;
  describeRun(root);
  if (failed(describeInput(root)) || failed(describeTargets(root)))
    return failure();
  describeDataHint(root);
  root["predicted"] = describePrediction();
  std::string data;
  if (failed(describeParameters(root, data)))
    return failure();
  root["stage_info"] = describeStages();
  root[key::kRanks] = describeRanks();
  root["sites"] = std::move(sites);

  // The metadata travels as a typed attribute of the module; its JSON text
  // is written when the module is translated (lib/Target).
  module->setAttr(GPipeDialect::kModelAttrName,
                  jsonToAttribute(ctx, llvm::json::Value(std::move(root))));
  // Evaluation programs share the training library's accessors.
  if (!evaluation)
    emitAccessors(data);
  return success();
}
