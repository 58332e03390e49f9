//===- StageBuffers.cpp - Where a stage function's values live --*- C++ -*-===//
//
// Liveness over stage-function bodies and the interval allocation of their
// scratch values; see StageBuffers.h.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/GPipe/Transforms/StageBuffers.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/IR/NNShapes.h"

using namespace mlir;
using namespace mlir::gpipe;

int64_t mlir::gpipe::getValueBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape() ||
      !shaped.getElementType().isIntOrFloat())
    return 0;
  return nn::tensorBytes(shaped);
}

static int64_t alignTo(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

FunctionLiveness::FunctionLiveness(func::FuncOp func) : func(func) {
  if (!func.isExternal())
    visit(func.getBody().front());
}

bool FunctionLiveness::isScratchValue(Value v) const {
  auto it = ranges.find(v);
  return it != ranges.end() && it->second.bytes > 0;
}

int64_t
FunctionLiveness::getPeak(llvm::function_ref<bool(Value)> excluded) const {
  std::vector<LiveRange> live;
  for (Value v : order)
    if (!excluded(v))
      live.push_back(ranges.lookup(v));
  return getPeakLiveBytes(live);
}

int64_t
FunctionLiveness::getTotal(llvm::function_ref<bool(Value)> excluded) const {
  int64_t total = 0;
  for (Value v : order)
    if (!excluded(v))
      total += ranges.lookup(v).bytes;
  return total;
}

Value FunctionLiveness::getCanonical(Value v) const {
  for (auto it = alias.find(v); it != alias.end(); it = alias.find(v))
    v = it->second;
  return v;
}

SmallVector<Value> FunctionLiveness::getReturned() const {
  SmallVector<Value> values;
  if (func.isExternal())
    return values;
  Operation *terminator = func.getBody().front().getTerminator();
  for (Value v : terminator->getOperands())
    values.push_back(getCanonical(v));
  return values;
}

void FunctionLiveness::visit(Block &block) {
  for (Operation &op : block) {
    if (auto layer = dyn_cast<nn::LayerOp>(op)) {
      Block &body = layer.getBodyBlock();
      for (auto [arg, operand] :
           llvm::zip(body.getArguments(), layer.getInputs()))
        alias[arg] = operand;
      visit(body);
      Operation *yield = body.getTerminator();
      for (auto [result, yielded] :
           llvm::zip(layer.getResults(), yield->getOperands()))
        alias[result] = yielded;
      continue;
    }
    // A re-materialization region runs in place: its results are the
    // values it yields.
    if (auto remat = dyn_cast<RematOp>(op)) {
      Block &body = remat.getBody().front();
      visit(body);
      for (auto [result, yielded] :
           llvm::zip(remat.getResults(), body.getTerminator()->getOperands()))
        alias[result] = yielded;
      continue;
    }
    // A fused loop's body values live in registers, not in buffers.
    if (!isa<nn::FusedOp>(op))
      for (Region &region : op.getRegions())
        for (Block &inner : region)
          visit(inner);
    int point = numPoints++;
    ops.push_back(&op);
    for (Value operand : op.getOperands()) {
      auto it = ranges.find(getCanonical(operand));
      if (it != ranges.end())
        it->second.lastUse = std::max(it->second.lastUse, point);
    }
    // Reshapes are views: their result is their input.
    if (isa<nn::ReshapeOp, nn::UnsqueezeOp>(op)) {
      alias[op.getResult(0)] = op.getOperand(0);
      continue;
    }
    bool free = isa<nn::ParamOp>(op) || op.hasTrait<OpTrait::ConstantLike>();
    for (Value result : op.getResults()) {
      int64_t bytes = free ? 0 : getValueBytes(result.getType());
      ranges[result] = LiveRange{bytes, point, point};
      order.push_back(result);
    }
  }
}

int64_t mlir::gpipe::getDeferredLayout(func::FuncOp input,
                                       SmallVectorImpl<int64_t> &offsets) {
  offsets.clear();
  FunctionType type = input.getFunctionType();
  unsigned n = std::min<unsigned>(nn::NNDialect::getDeferredCount(input),
                                  type.getNumResults());
  int64_t top = 0;
  for (Type t : type.getResults().take_back(n)) {
    offsets.push_back(top);
    top += alignTo(getValueBytes(t), 16);
  }
  return top;
}

StageFunctionBuffers mlir::gpipe::planStageFunction(
    func::FuncOp func, const FunctionLiveness &liveness, StageFunctionKind kind,
    int64_t index, int64_t numStages, unsigned numForwardArgs,
    int64_t alignment) {
  StageFunctionBuffers plan;
  bool last = index + 1 == numStages;
  SmallVector<Value> returned = liveness.getReturned();
  // A value computed in the function (not an argument, parameter or
  // constant) goes straight into the buffer it is returned in, once.
  auto route = [&](unsigned i) {
    if (i < returned.size() && liveness.isScratchValue(returned[i]))
      plan.routed.try_emplace(returned[i], i);
  };
  unsigned numInputGrads = 0;
  if (kind == StageFunctionKind::Forward) {
    // The output (sent on, unless this is the last stage, whose first
    // result is the loss or the prediction it reports), then the values it
    // saves for its backward: each computed into its saved slot.
    for (unsigned i = last ? 1 : 0; i < returned.size(); ++i)
      route(i);
  }
  if (kind == StageFunctionKind::Backward) {
    auto inputGrads = func->getAttrOfType<DenseI64ArrayAttr>("nn.input_grads");
    numInputGrads = inputGrads ? inputGrads.size() : index > 0;
    if (numInputGrads > 0)
      route(0);
    // An input half's deferred values go into the Deferred buffer.
    if (!func->getAttr("nn.param_grads"))
      for (unsigned i = 0, n = nn::NNDialect::getDeferredCount(func); i < n;
           ++i)
        route(numInputGrads + i);
    // Weight gradients a GEMM accumulates in place go into the rank's
    // gradient buffer.
    for (auto [index, gemm] :
         nn::NNDialect::getAccumulatingGemms(func, numInputGrads))
      route(index);
  }

  std::vector<PlannedBuffer> buffers;
  SmallVector<Value> placed;
  for (Value v : liveness.getValues()) {
    if (plan.routed.count(v) || !liveness.isScratchValue(v))
      continue;
    LiveRange range = liveness.getRange(v);
    PlannedBuffer buffer;
    buffer.kind = BufferKind::Scratch;
    buffer.bytes = range.bytes;
    buffer.firstAction = range.def;
    buffer.lastAction = range.lastUse;
    buffer.keptFromAction = range.def;
    buffers.push_back(buffer);
    placed.push_back(v);
  }
  int64_t top = allocateArena(buffers, alignment);
  for (auto [v, buffer] : llvm::zip(placed, buffers))
    plan.offsets[v] = buffer.offset;

  if (kind == StageFunctionKind::Backward && last && !func.isExternal()) {
    FunctionType type = func.getFunctionType();
    // A weight half takes the deferred values after the seeds.
    // (An input half's count is of results, and it has no nn.param_grads.)
    unsigned end = type.getNumInputs();
    if (func->getAttr("nn.param_grads"))
      end -= std::min(nn::NNDialect::getDeferredCount(func), end);
    for (unsigned i = numForwardArgs; i < end; ++i) {
      plan.seedOffsets.push_back(top);
      top += alignTo(getValueBytes(type.getInput(i)), alignment);
    }
  }
  plan.scratchBytes = top;
  return plan;
}
