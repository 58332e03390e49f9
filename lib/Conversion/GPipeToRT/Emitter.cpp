//===- Emitter.cpp - Parameter layout, the order of the work ----*- C++ -*-===//
//
// Part of the lowering's emitter; see Emitter.h.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::lowering;

LogicalResult Emitter::collectParams() {
  for (StageOp stage : converted.stages) {
    auto forward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        stage, stage.getForwardAttr());
    StageParams sp;
    // Running statistics go after the trainable parameters.
    llvm::DenseSet<StringRef> statistics;
    WalkResult walk = forward.walk([&](nn::BatchNormOp bn) {
      auto mean = bn.getRunningMean().getDefiningOp<nn::ParamOp>();
      auto var = bn.getRunningVar().getDefiningOp<nn::ParamOp>();
      if (!mean || !var || mean.getName() == var.getName()) {
        bn.emitOpError("needs two distinct parameters as running statistics");
        return WalkResult::interrupt();
      }
      for (nn::ParamOp p : {mean, var})
        if (!statistics.insert(p.getName()).second) {
          bn.emitOpError("shares the running statistic @")
              << p.getName() << " with another batch norm";
          return WalkResult::interrupt();
        }
      ArrayRef<int64_t> shape = cast<ShapedType>(bn.getType()).getShape();
      RunningStats stats;
      stats.mean = mean.getName();
      stats.var = var.getName();
      stats.channels = shape[1];
      stats.countPerMicrobatch = nn::numElements(shape) / shape[1];
      stats.momentum = bn.getMomentum().convertToDouble();
      sp.runningStats.push_back(stats);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    // Statistics whose batch norm inference replaced (nn-inference marks
    // them) keep their place after the trainable parameters.
    for (auto decl : module.getBody()->getOps<nn::ParameterOp>())
      if (decl->hasAttr(nn::NNDialect::kRunningStatisticAttrName))
        statistics.insert(decl.getSymName());
    auto place = [&](bool wantStatistics) {
      return forward.walk([&](nn::ParamOp param) {
        if (sp.params.count(param.getName()) ||
            statistics.contains(param.getName()) != wantStatistics)
          return WalkResult::advance();
        // The read's type is the declaration's (verified).
        auto type = dyn_cast<RankedTensorType>(param.getType());
        if (!type || !type.getElementType().isF32()) {
          mlir::emitError(param.getLoc())
              << "parameter @" << param.getName()
              << " must be a declared f32 tensor for the CPU code generator";
          return WalkResult::interrupt();
        }
        int64_t count = type.getNumElements();
        sp.params[param.getName()] = {sp.bytes, count};
        sp.bytes += count * 4;
        return WalkResult::advance();
      });
    };
    if (place(false).wasInterrupted())
      return failure();
    sp.trainableBytes = sp.bytes;
    if (place(true).wasInterrupted())
      return failure();
    // Nothing of a forward-only pipeline is trained; its statistics (in
    // their training place) are no batch norm's to update.
    if (pipeline.isForwardOnly())
      sp.trainableBytes = sp.bytes;
    stageParams.push_back(std::move(sp));
  }
  return success();
}

LogicalResult Emitter::run() {
  if (failed(collectParams()))
    return failure();
  // The model's layers in stage order: what the metadata's stage_info lists
  // and the stage functions' layer marks index.
  for (StageOp stage : converted.stages) {
    auto forward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        stage, stage.getForwardAttr());
    if (forward && !forward.isExternal())
      for (auto layer : forward.getBody().front().getOps<nn::LayerOp>())
        layerIndex.try_emplace(layer.getNameAttr(), layerIndex.size());
  }
  for (auto [s, stageRef] : llvm::enumerate(converted.stages)) {
    StageOp stage = stageRef;
    auto forward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        stage, stage.getForwardAttr());
    func::FuncOp backward;
    if (stage.hasBackward())
      backward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          stage, stage.getBackwardAttr());
    unsigned saved = 0;
    if (auto count = forward->getAttrOfType<IntegerAttr>("nn.saved_count"))
      saved = unsigned(count.getInt());
    if (pipeline.getRemat() == Remat::Stage)
      saved = 0;
    numSaved.push_back(saved);
    FailureOr<LoweredFunction> f =
        lowerStageFunction(forward, StageFunctionKind::Forward, int64_t(s));
    if (failed(f))
      return failure();
    FunctionType ft = forward.getFunctionType();
    // A forward-only stage (inference) has no backward to lower.
    LoweredFunction bw;
    if (backward) {
      FailureOr<LoweredFunction> lowered =
          lowerStageFunction(backward, StageFunctionKind::Backward, int64_t(s));
      if (failed(lowered))
        return failure();
      bw = *lowered;
    }
    forwards.push_back(*f);
    backwards.push_back(bw);
    // The zero-bubble halves, when the stage declares them.
    std::optional<LoweredFunction> in, w;
    SmallVector<int64_t> deferredOff;
    if (stage.hasSplitBackward()) {
      auto lookup = [&](FlatSymbolRefAttr ref) {
        return SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(stage, ref);
      };
      func::FuncOp input = lookup(stage.getBackwardInputAttr());
      func::FuncOp weight = lookup(stage.getBackwardWeightAttr());
      FailureOr<LoweredFunction> li =
          lowerStageFunction(input, StageFunctionKind::Backward, int64_t(s));
      if (failed(li))
        return failure();
      FailureOr<LoweredFunction> lw =
          lowerStageFunction(weight, StageFunctionKind::Backward, int64_t(s));
      if (failed(lw))
        return failure();
      in = *li;
      w = *lw;
      getDeferredLayout(input, deferredOff);
    }
    inputHalves.push_back(in);
    weightHalves.push_back(w);
    deferredOffsets.push_back(deferredOff);

    // The layout of the Saved and ExtraInput buffers: packed, each distinct
    // saved value once, in result order (what the planner counts).
    SmallVector<int64_t> savedOff;
    if (saved > 0) {
      FunctionLiveness liveness(forward);
      SmallVector<Value> returned = liveness.getReturned();
      llvm::DenseMap<Value, int64_t> seen;
      int64_t top = 0;
      for (Value v : ArrayRef<Value>(returned).take_back(saved)) {
        auto [it, inserted] = seen.try_emplace(v, top);
        if (inserted)
          top += getValueBytes(v.getType());
        savedOff.push_back(it->second);
      }
    }
    savedOffsets.push_back(savedOff);
    SmallVector<int64_t> extraOff;
    int64_t top = 0;
    for (unsigned i = 1; i < ft.getNumInputs(); ++i) {
      extraOff.push_back(top);
      top += getValueBytes(ft.getInput(i));
    }
    extraOffsets.push_back(extraOff);
  }
  if (failed(convertStageFunctions()))
    return failure();
  // The metadata describes the programs as they are; then they become
  // code.
  if (failed(emitMetadata()))
    return failure();
  return lowerPrograms();
}
