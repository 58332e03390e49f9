//===- Differentiate.cpp - Reverse-mode autodiff over nn ops --------------===//
//
// Implements `buildBackwardFunction`, reverse-mode differentiation of a
// network function through the ops' `VJPOpInterface`, and the
// `nn-differentiate` pass that builds `<name>_bwd` for every function marked
// `nn.differentiate`. The backward function recomputes the forward (nn.layer
// bodies inlined), seeds the result gradients (scaled by the loss scale),
// walks the ops in reverse order accumulating gradients with `nn.add`, and
// returns the gradients of the float arguments and of every parameter read.
// With `saveActivations` (remat none) it recomputes nothing: the forward
// values the VJPs read become extra results of the forward (threaded out of
// nn.layer ops) and arguments of the backward.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNLayerLoc.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <cmath>

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNDIFFERENTIATEPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe::nn;

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

static Value zerosOf(OpBuilder &b, Location loc, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  Attribute zero = FloatAttr::get(tensor.getElementType(), 0.0);
  auto attr = DenseElementsAttr::get(tensor, ArrayRef<Attribute>(zero));
  return ConstantOp::create(b, loc, cast<ElementsAttr>(attr));
}

/// Splices the body of every nn.layer in `block` in place of the layer,
/// repeating until none is left (a layer inside a layer surfaces in the next
/// round): no recursion over the IR.
static void inlineLayers(Block &block) {
  SmallVector<LayerOp> layers;
  while (true) {
    layers.assign(block.getOps<LayerOp>().begin(),
                  block.getOps<LayerOp>().end());
    if (layers.empty())
      return;
    for (LayerOp layer : layers) {
      Block &body = layer.getBodyBlock();
      // Ops of a top-level layer keep its name in their locations (the
      // gradients built from them inherit it): see NNLayerLoc.h.
      if (isa<FunctionOpInterface>(layer->getParentOp()))
        body.walk([&](Operation *op) {
          op->setLoc(getLayerLoc(op->getLoc(), layer.getNameAttr()));
        });
      auto yield = cast<YieldOp>(body.getTerminator());
      SmallVector<Value> yielded(yield.getValues());
      // A layer that yields one of its own arguments yields its input:
      // the argument dies with the layer.
      for (Value &v : yielded)
        if (auto arg = dyn_cast<BlockArgument>(v);
            arg && arg.getOwner() == &body)
          v = layer.getInputs()[arg.getArgNumber()];
      yield.erase();
      for (auto [arg, input] :
           llvm::zip(body.getArguments(), layer.getInputs()))
        arg.replaceAllUsesWith(input);
      block.getOperations().splice(Block::iterator(layer),
                                   body.getOperations());
      layer->replaceAllUsesWith(yielded);
      layer.erase();
    }
  }
}

/// Replaces every read of a parameter after its first by the first one, so a
/// parameter read in several places (or by several inlined layers) is one
/// value whose gradient sums all reads. Returns the first reads in order.
static llvm::MapVector<StringAttr, ParamOp> mergeParamReads(Block &block) {
  llvm::MapVector<StringAttr, ParamOp> first;
  for (ParamOp read : llvm::make_early_inc_range(block.getOps<ParamOp>())) {
    auto [it, inserted] = first.try_emplace(read.getNameAttr().getAttr(), read);
    if (inserted)
      continue;
    read.getResult().replaceAllUsesWith(it->second.getResult());
    read.erase();
  }
  return first;
}

/// Makes every value of `values` (defined in `func`, possibly inside nn.layer
/// ops, nested or not) available in the function's block: a value inside a
/// layer becomes an extra result of the layer (yielded after its results);
/// each round rebuilds every layer that directly holds one of them, so a
/// value nested k layers deep surfaces after k rounds. Returns the values to
/// use in the block, in the order of `values`.
static SmallVector<Value> exposeFromLayers(func::FuncOp func,
                                           ArrayRef<Value> values) {
  SmallVector<Value> out(values);
  Block &top = func.getBody().front();
  OpBuilder builder(func.getContext());
  while (true) {
    llvm::MapVector<Operation *, SmallVector<unsigned>> byLayer;
    for (auto [i, v] : llvm::enumerate(out))
      if (v.getParentBlock() != &top)
        byLayer[v.getParentBlock()->getParentOp()].push_back(i);
    if (byLayer.empty())
      return out;
    for (auto &[op, indices] : byLayer) {
      auto layer = cast<LayerOp>(op);
      Operation *yield = layer.getBodyBlock().getTerminator();
      unsigned numResults = layer->getNumResults();
      SmallVector<Type> types(layer->getResultTypes());
      for (unsigned i : indices) {
        yield->insertOperands(yield->getNumOperands(), out[i]);
        types.push_back(out[i].getType());
      }
      builder.setInsertionPoint(layer);
      auto rebuilt = LayerOp::create(builder, layer.getLoc(), types,
                                     layer.getNameAttr(), layer.getInputs());
      rebuilt->setDiscardableAttrs(layer->getDiscardableAttrDictionary());
      rebuilt.getBody().takeBody(layer.getBody());
      layer->replaceAllUsesWith(rebuilt->getResults().take_front(numResults));
      // Values already exposed as results of this layer (a layer rebuilt
      // again in a later round) move to the rebuilt one.
      for (Value &v : out)
        if (v.getDefiningOp() == layer.getOperation())
          v = rebuilt->getResult(cast<OpResult>(v).getResultNumber());
      layer.erase();
      for (auto [k, i] : llvm::enumerate(indices))
        out[i] = rebuilt->getResult(numResults + k);
    }
  }
}

/// The `saveActivations` rewrite of `buildBackwardFunction`: the forward
/// values (results of `forwardOps` other than parameter reads and constants)
/// that the reverse pass or the return of `backward` reads become arguments
/// of `backward` after its first `numInputs`, and extra results of
/// `forward`. `original` maps a backward value to the forward value it
/// clones. The ops it erases leave `allForwardOps`.
static void saveActivations(func::FuncOp forward, func::FuncOp backward,
                            llvm::DenseSet<Operation *> &allForwardOps,
                            const llvm::DenseMap<Value, Value> &original,
                            unsigned numInputs,
                            ArrayRef<StringAttr> recomputeLayers) {
  Block &block = backward.getBody().front();
  // The forward ops whose values are kept: all but those of the layers to
  // recompute, which stay in the backward and read the kept values.
  llvm::DenseSet<Operation *> forwardOps;
  for (Operation &op : block) {
    if (!allForwardOps.contains(&op))
      continue;
    StringAttr layer = getLayerOfLoc(op.getLoc());
    if (!layer || !llvm::is_contained(recomputeLayers, layer))
      forwardOps.insert(&op);
  }
  SmallVector<Value> saved;
  for (Operation &op : block) {
    if (!forwardOps.contains(&op) || isa<ParamOp>(op) ||
        op.hasTrait<::mlir::OpTrait::ConstantLike>())
      continue;
    for (Value r : op.getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *user) {
            return !forwardOps.contains(user);
          }))
        saved.push_back(r);
  }
  MLIRContext *ctx = forward.getContext();
  auto count = IntegerAttr::get(IntegerType::get(ctx, 64), saved.size());

  // Backward: the saved values come in as arguments; the forward ops that
  // computed them die.
  SmallVector<unsigned> positions(saved.size(), numInputs);
  SmallVector<Type> types;
  SmallVector<Location> locs;
  for (Value v : saved) {
    types.push_back(v.getType());
    locs.push_back(v.getLoc());
  }
  SmallVector<DictionaryAttr> argAttrs(saved.size(),
                                       DictionaryAttr::get(ctx, {}));
  (void)backward.insertArguments(positions, types, argAttrs, locs);
  for (auto [k, v] : llvm::enumerate(saved))
    v.replaceAllUsesWith(block.getArgument(numInputs + k));
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isOpTriviallyDead(&op)) {
      allForwardOps.erase(&op);
      op.erase();
    }
  backward->setAttr(kSavedCountAttrName, count);

  // Forward: returns them after its results.
  SmallVector<Value> sources;
  for (Value v : saved)
    sources.push_back(original.lookup(v));
  SmallVector<Value> exposed = exposeFromLayers(forward, sources);
  Operation *ret = forward.getBody().front().getTerminator();
  ret->insertOperands(ret->getNumOperands(), exposed);
  forward.setFunctionType(FunctionType::get(
      ctx, forward.getFunctionType().getInputs(), ret->getOperandTypes()));
  forward->setAttr(kSavedCountAttrName, count);
}

namespace {

/// Reverse-mode state over one flat block.
class ReverseMode {
public:
  explicit ReverseMode(OpBuilder &builder) : builder(builder) {}

  /// Marks the values gradients flow to: float arguments and parameter reads,
  /// and every float result of an op with such an operand.
  void markActive(Block &block, unsigned numInputs) {
    for (BlockArgument arg : block.getArguments().take_front(numInputs))
      if (isFloatTensor(arg.getType()))
        active.insert(arg);
    for (Operation &op : block) {
      bool isSource = isa<ParamOp>(op);
      bool fed = llvm::any_of(op.getOperands(),
                              [&](Value v) { return active.contains(v); });
      if (!isSource && !fed)
        continue;
      for (Value r : op.getResults())
        if (isFloatTensor(r.getType()))
          active.insert(r);
    }
  }

  bool isActive(Value v) const { return active.contains(v); }

  /// Adds `grad` to the gradient of `value` (at the builder's insertion
  /// point, located at `loc`).
  void accumulate(Value value, Value grad, Location loc) {
    auto [it, inserted] = grads.try_emplace(value, grad);
    if (!inserted)
      it->second = AddOp::create(builder, loc, it->second, grad);
  }

  Value gradientOf(Value v) const { return grads.lookup(v); }

  /// Runs the VJP of every op of `ops` in reverse order whose results have a
  /// gradient.
  LogicalResult run(ArrayRef<Operation *> ops) {
    SmallVector<Value> resultGrads, operandGrads;
    for (Operation *op : llvm::reverse(ops)) {
      resultGrads.clear();
      for (Value r : op->getResults())
        resultGrads.push_back(grads.lookup(r));
      if (llvm::none_of(resultGrads, [](Value g) { return bool(g); }) ||
          llvm::none_of(op->getOperands(),
                        [&](Value v) { return isActive(v); }))
        continue;
      auto vjp = dyn_cast<VJPOpInterface>(op);
      if (!vjp)
        return op->emitOpError("is on the gradient path but has no VJP");
      operandGrads.clear();
      if (failed(vjp.buildVJP(builder, resultGrads, operandGrads)))
        return failure();
      if (operandGrads.size() != op->getNumOperands())
        return op->emitOpError("VJP built ")
               << operandGrads.size() << " operand gradients for "
               << op->getNumOperands() << " operands";
      for (auto [i, operand, grad] :
           llvm::enumerate(op->getOperands(), operandGrads)) {
        if (!grad || !isActive(operand))
          continue;
        if (grad.getType() != operand.getType())
          return op->emitOpError("VJP built a gradient of type ")
                 << grad.getType() << " for operand #" << i << " of type "
                 << operand.getType();
        accumulate(operand, grad, op->getLoc());
      }
    }
    return success();
  }

private:
  OpBuilder &builder;
  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, Value> grads;
};

} // namespace

FailureOr<func::FuncOp>
mlir::gpipe::nn::buildBackwardFunction(func::FuncOp forward, StringRef name,
                                       const BackwardOptions &options) {
  if (forward.isExternal() || !forward.getBody().hasOneBlock())
    return forward.emitOpError("expected a body of one block to differentiate"),
           failure();
  if (!std::isfinite(options.lossScale))
    return forward.emitOpError("loss scale ")
               << options.lossScale << " is not finite",
           failure();
  Operation *symbolTableOp = SymbolTable::getNearestSymbolTable(forward);
  if (symbolTableOp && SymbolTable::lookupSymbolIn(symbolTableOp, name))
    return forward.emitOpError("cannot create backward function '")
               << name << "': the symbol exists",
           failure();

  MLIRContext *ctx = forward.getContext();
  Block &fwdBlock = forward.getBody().front();
  Operation *fwdReturn = fwdBlock.getTerminator();
  FunctionType fwdType = forward.getFunctionType();
  unsigned numInputs = fwdType.getNumInputs();

  // Arguments: the forward's, then one seed per float result.
  SmallVector<Type> argTypes(fwdType.getInputs());
  SmallVector<Location> argLocs;
  for (BlockArgument arg : fwdBlock.getArguments())
    argLocs.push_back(arg.getLoc());
  SmallVector<unsigned> seeded;
  for (auto [i, type] : llvm::enumerate(fwdType.getResults())) {
    if (!isFloatTensor(type))
      continue;
    seeded.push_back(i);
    argTypes.push_back(type);
    argLocs.push_back(fwdReturn->getOperand(i).getLoc());
  }

  OpBuilder builder(ctx);
  builder.setInsertionPointAfter(forward);
  auto backward = func::FuncOp::create(builder, forward.getLoc(), name,
                                       builder.getFunctionType(argTypes, {}));
  backward.setVisibility(forward.getVisibility());
  Block *block =
      builder.createBlock(&backward.getBody(), {}, argTypes, argLocs);

  // Recompute the forward, flat.
  IRMapping mapping;
  for (auto [from, to] :
       llvm::zip(fwdBlock.getArguments(), block->getArguments()))
    mapping.map(from, to);
  for (Operation &op : fwdBlock.without_terminator())
    builder.clone(op, mapping);
  // The cloned return keeps track of the results while layers are inlined
  // and parameter reads merged; reverse mode reads them from it.
  Operation *results = builder.clone(*fwdReturn, mapping);
  inlineLayers(*block);
  llvm::MapVector<StringAttr, ParamOp> params = mergeParamReads(*block);
  SmallVector<Value> resultValues(results->getOperands());
  results->erase();
  SmallVector<Operation *> forwardOps;
  for (Operation &op : *block)
    forwardOps.push_back(&op);
  llvm::DenseSet<Operation *> forwardOpSet(forwardOps.begin(),
                                           forwardOps.end());

  ReverseMode reverse(builder);
  reverse.markActive(*block, numInputs);

  // Seeds, scaled by the loss scale (one scale constant per element type).
  builder.setInsertionPointToEnd(block);
  Location returnLoc = fwdReturn->getLoc();
  llvm::DenseMap<Type, Value> scaleOf;
  for (auto [k, resultIndex] : llvm::enumerate(seeded)) {
    Value result = resultValues[resultIndex];
    if (!reverse.isActive(result))
      continue;
    Value seed = block->getArgument(numInputs + k);
    if (options.lossScale != 1.0) {
      Type elementType =
          cast<RankedTensorType>(seed.getType()).getElementType();
      Value &factor = scaleOf[elementType];
      if (!factor) {
        auto scalarType = RankedTensorType::get({}, elementType);
        Attribute scale = FloatAttr::get(elementType, options.lossScale);
        factor =
            ConstantOp::create(builder, returnLoc,
                               cast<ElementsAttr>(DenseElementsAttr::get(
                                   scalarType, ArrayRef<Attribute>(scale))));
      }
      seed = MulOp::create(builder, returnLoc, seed, factor);
    }
    reverse.accumulate(result, seed, returnLoc);
  }

  if (failed(reverse.run(forwardOps))) {
    backward.erase();
    return failure();
  }

  // Results: float argument gradients, then parameter gradients.
  SmallVector<Value> returned;
  SmallVector<int64_t> inputPositions;
  for (BlockArgument arg : block->getArguments().take_front(numInputs)) {
    if (!isFloatTensor(arg.getType()))
      continue;
    Value grad = reverse.gradientOf(arg);
    returned.push_back(grad ? grad
                            : zerosOf(builder, arg.getLoc(), arg.getType()));
    inputPositions.push_back(arg.getArgNumber());
  }
  SmallVector<Attribute> paramNames;
  for (auto &[symbol, read] : params) {
    Value grad = reverse.gradientOf(read.getResult());
    returned.push_back(grad ? grad
                            : zerosOf(builder, read.getLoc(), read.getType()));
    paramNames.push_back(FlatSymbolRefAttr::get(symbol));
  }
  func::ReturnOp::create(builder, returnLoc, returned);
  backward.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(returned).getTypes()));
  backward->setAttr(kInputGradsAttrName,
                    builder.getDenseI64ArrayAttr(inputPositions));
  backward->setAttr(kParamGradsAttrName, builder.getArrayAttr(paramNames));
  if (options.lossScale != 1.0)
    backward->setAttr(kLossScaleAttrName,
                      builder.getF64FloatAttr(options.lossScale));

  // Drop the forward ops (and VJP by-products) nothing needs: one sweep in
  // reverse order removes whole dead chains. The set of forward ops loses
  // them too (nothing may read an erased op).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*block)))
    if (isOpTriviallyDead(&op)) {
      forwardOpSet.erase(&op);
      op.erase();
    }

  if (options.saveActivations) {
    llvm::DenseMap<Value, Value> original;
    for (auto [from, to] : mapping.getValueMap())
      original.try_emplace(to, from);
    saveActivations(forward, backward, forwardOpSet, original, numInputs,
                    options.recomputeLayers);
  }
  // What is left of the forward's clone recomputes.
  if (options.recomputed &&
      (!options.saveActivations || !options.recomputeLayers.empty()))
    for (Operation &op : *block)
      if (forwardOpSet.contains(&op))
        options.recomputed->push_back(&op);
  return backward;
}

namespace {
struct NNDifferentiatePass
    : public mlir::gpipe::nn::impl::NNDifferentiatePassBase<
          NNDifferentiatePass> {
  using NNDifferentiatePassBase::NNDifferentiatePassBase;
  void runOnOperation() override {
    SmallVector<func::FuncOp> marked;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func->hasAttr(kDifferentiateAttrName))
        marked.push_back(func);
    BackwardOptions options;
    options.lossScale = lossScale;
    options.saveActivations = saveActivations;
    for (func::FuncOp func : marked) {
      std::string name = (func.getSymName() + "_bwd").str();
      if (failed(buildBackwardFunction(func, name, options)))
        return signalPassFailure();
    }
  }
};
} // namespace
