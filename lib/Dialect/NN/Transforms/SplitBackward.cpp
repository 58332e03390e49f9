//===- SplitBackward.cpp - Input- and weight-gradient halves --------------===//
//
// Implements `splitBackwardFunction`: the zero-bubble split of a backward
// function (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", section 2)
// into the half that computes the input gradients (what the previous
// pipeline stage waits for) and the half that computes the parameter
// gradients (which can run later, in a bubble). Both halves are the
// backward's own ops, partitioned by what each result needs: nothing is
// differentiated twice and nothing is recomputed twice. What the input half
// computed and the weight half reads is handed over as extra results of the
// first and extra arguments of the second.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::nn;

/// Calls `fn` on every value `op` (with its regions) reads from `body`: its
/// operands and what its nested ops read from outside it.
static void forEachRead(Operation *op, Block &body,
                        llvm::function_ref<void(Value)> fn) {
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (v.getParentBlock() == &body)
        fn(v);
  });
}

/// Parameter reads and constants cost nothing to repeat: the weight half
/// re-creates them instead of taking them from the input half.
static bool isFree(Operation *op) {
  return isa<ParamOp>(op) || op->hasTrait<mlir::OpTrait::ConstantLike>();
}

/// Marks, in `marked`, the ops of `body` that the values in `roots` need,
/// transitively. An op in `stop` is not entered: the value is recorded in
/// `boundary` instead (unless the op is free, then it is marked).
static void markNeeded(Block &body, ArrayRef<Value> roots,
                       llvm::DenseSet<Operation *> &marked,
                       const llvm::DenseSet<Operation *> *stop,
                       llvm::SetVector<Value> *boundary) {
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &body)
      continue; // an argument
    if (stop && stop->contains(def) && !isFree(def)) {
      boundary->insert(v);
      continue;
    }
    if (!marked.insert(def).second)
      continue;
    forEachRead(def, body, [&](Value read) { work.push_back(read); });
  }
}

FailureOr<SplitBackward> mlir::gpipe::nn::splitBackwardFunction(
    func::FuncOp backward, StringRef inputName, StringRef weightName) {
  if (backward.isExternal() || !backward.getBody().hasOneBlock())
    return mlir::emitError(backward.getLoc(), "cannot split @")
               << backward.getSymName() << ": it has no single-block body",
           failure();
  auto module = backward->getParentOfType<ModuleOp>();
  if (module && (SymbolTable::lookupSymbolIn(module, inputName) ||
                 SymbolTable::lookupSymbolIn(module, weightName)))
    return mlir::emitError(backward.getLoc(), "cannot split @")
               << backward.getSymName() << ": symbol '"
               << (SymbolTable::lookupSymbolIn(module, inputName) ? inputName
                                                                  : weightName)
               << "' already exists",
           failure();
  auto paramGrads = backward->getAttrOfType<ArrayAttr>(kParamGradsAttrName);
  if (!paramGrads)
    return mlir::emitError(backward.getLoc(), "cannot split @")
               << backward.getSymName() << ": it lacks '" << kParamGradsAttrName
               << "'",
           failure();
  Block &body = backward.getBody().front();
  Operation *ret = body.getTerminator();
  unsigned numResults = ret->getNumOperands();
  if (paramGrads.size() > numResults)
    return mlir::emitError(backward.getLoc(), "cannot split @")
               << backward.getSymName() << ": it names " << paramGrads.size()
               << " parameter gradients but returns " << numResults
               << " values",
           failure();
  unsigned numInputGrads = numResults - paramGrads.size();
  auto inputRoots = ret->getOperands().take_front(numInputGrads);
  auto weightRoots = ret->getOperands().drop_front(numInputGrads);

  // The input half: what the input gradients need. The weight half: what
  // the parameter gradients need beyond it; the input half's values it
  // reads are handed over (in definition order, so the split is
  // deterministic).
  llvm::DenseSet<Operation *> inputOps, weightOps;
  markNeeded(body, SmallVector<Value>(inputRoots), inputOps, nullptr, nullptr);
  llvm::SetVector<Value> handed;
  markNeeded(body, SmallVector<Value>(weightRoots), weightOps, &inputOps,
             &handed);
  SmallVector<Value> deferred(handed.begin(), handed.end());
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  llvm::stable_sort(deferred, [&](Value a, Value b) {
    unsigned pa = position.lookup(a.getDefiningOp());
    unsigned pb = position.lookup(b.getDefiningOp());
    if (pa != pb)
      return pa < pb;
    return cast<OpResult>(a).getResultNumber() <
           cast<OpResult>(b).getResultNumber();
  });

  MLIRContext *ctx = backward.getContext();
  FunctionType type = backward.getFunctionType();
  Location loc = backward.getLoc();
  OpBuilder builder(ctx);
  builder.setInsertionPointAfter(backward);
  auto count = IntegerAttr::get(IntegerType::get(ctx, 64), deferred.size());
  auto copyAttrs = [&](func::FuncOp to) {
    for (StringRef name : {kSavedCountAttrName, kLossScaleAttrName})
      if (Attribute a = backward->getAttr(name))
        to->setAttr(name, a);
    to->setAttr(kDeferredCountAttrName, count);
  };

  // (arguments) -> (input gradients..., deferred...)
  SmallVector<Type> inputResults(ValueRange(inputRoots).getTypes());
  for (Value v : deferred)
    inputResults.push_back(v.getType());
  auto input = func::FuncOp::create(
      builder, loc, inputName,
      FunctionType::get(ctx, type.getInputs(), inputResults));
  copyAttrs(input);
  if (Attribute a = backward->getAttr(kInputGradsAttrName))
    input->setAttr(kInputGradsAttrName, a);
  {
    Block *entry = input.addEntryBlock();
    IRMapping map;
    map.map(body.getArguments(), entry->getArguments());
    OpBuilder b = OpBuilder::atBlockEnd(entry);
    for (Operation &op : body.without_terminator())
      if (inputOps.contains(&op))
        b.clone(op, map);
    SmallVector<Value> results;
    for (Value v : inputRoots)
      results.push_back(map.lookup(v));
    for (Value v : deferred)
      results.push_back(map.lookup(v));
    func::ReturnOp::create(b, ret->getLoc(), results);
  }

  // (arguments..., deferred...) -> (parameter gradients...)
  builder.setInsertionPointAfter(input);
  SmallVector<Type> weightInputs(type.getInputs());
  for (Value v : deferred)
    weightInputs.push_back(v.getType());
  auto weight = func::FuncOp::create(
      builder, loc, weightName,
      FunctionType::get(ctx, weightInputs, ValueRange(weightRoots).getTypes()));
  copyAttrs(weight);
  weight->setAttr(kParamGradsAttrName, paramGrads);
  weight->setAttr(kInputGradsAttrName, DenseI64ArrayAttr::get(ctx, {}));
  {
    Block *entry = weight.addEntryBlock();
    IRMapping map;
    map.map(body.getArguments(),
            entry->getArguments().take_front(body.getNumArguments()));
    for (auto [v, arg] : llvm::zip_equal(
             deferred,
             entry->getArguments().drop_front(body.getNumArguments())))
      map.map(v, arg);
    OpBuilder b = OpBuilder::atBlockEnd(entry);
    for (Operation &op : body.without_terminator())
      if (weightOps.contains(&op))
        b.clone(op, map);
    SmallVector<Value> results;
    for (Value v : weightRoots)
      results.push_back(map.lookup(v));
    func::ReturnOp::create(b, ret->getLoc(), results);
  }
  return SplitBackward{input, weight};
}
