//===- Microbatch.cpp - Rewrite a network to micro-batch shapes -*- C++ -*-===//
//
// Implements `nn-microbatch` and `microbatchFunction`: a forward dataflow
// analysis finds, for every tensor of the network function, which dim holds
// the batch (dim 0 of every argument, by convention) and checks that no op
// mixes samples; the rewrite then divides that dim by the number of
// micro-batches M in every type (function and nn.layer signatures, block
// arguments, op results), in the shape attributes that depend on it (slice
// sizes), and in batch-sized constants whose slices along the batch are
// identical.
//
// The batch of a tensor is tracked as (dim, outer, inner): the dim has size
// outer * B * inner in row-major order, with the batch a contiguous factor of
// it, so a reshape may merge the batch with neighbouring dims ([T, B*H, hd],
// [T*B, E]) and split it out again. Micro-batching turns that size into
// outer * (B/M) * inner.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/IR/NNShapes.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>
#include <string>

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNMICROBATCHPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe::nn;

namespace {

/// Where a tensor carries the batch: dim `dim` has size outer * B * inner,
/// the batch index being the middle factor in row-major order.
struct BatchDim {
  int64_t dim = 0;
  int64_t outer = 1;
  int64_t inner = 1;

  bool sameFactor(const BatchDim &other) const {
    return outer == other.outer && inner == other.inner;
  }
};

/// A batch-free constant used where the batch is: it is replaced by its
/// first B/M slices along `where.dim` (all of its B slices are identical).
struct ConstantSlice {
  OpOperand *use;
  BatchDim where;
};

class Microbatcher {
public:
  Microbatcher(func::FuncOp func, int64_t batch, int64_t m)
      : func(func), batch(batch), m(m) {}

  /// Seeds the arguments and propagates through the body; reports the first
  /// op that cannot be micro-batched. Changes nothing.
  LogicalResult analyze();
  /// Rewrites the types and attributes found by `analyze`.
  void rewrite();

private:
  LogicalResult visit(Operation *op);

  std::optional<BatchDim> lookup(Value v) const {
    auto it = state.find(v);
    if (it == state.end())
      return std::nullopt;
    return it->second;
  }
  void set(Value v, BatchDim b) { state[v] = b; }

  static ArrayRef<int64_t> shapeOf(Value v) {
    return cast<ShapedType>(v.getType()).getShape();
  }

  InFlightDiagnostic mixes(Operation *op, unsigned operand, BatchDim b);
  InFlightDiagnostic unsupported(Operation *op, unsigned operand, BatchDim b,
                                 StringRef what);

  /// `operand` does not carry the batch but has the full batch-dim size at
  /// `dim`, aligned with the batch `b` of another operand or the result:
  /// fine for a constant whose slices along the batch are all identical.
  LogicalResult absorb(Operation *op, OpOperand &operand, int64_t dim,
                       BatchDim b);
  /// Numpy broadcasting of the leading `rank` dims of each operand against a
  /// result of rank `resultRank`, aligned from the right. Batch-carrying
  /// operands must agree on the result dim and factor; the others must have
  /// size 1 (or nothing) there. `result` holds the batch found so far in
  /// result coordinates and is updated.
  LogicalResult broadcast(Operation *op,
                          ArrayRef<std::pair<OpOperand *, int64_t>> operands,
                          int64_t resultRank, std::optional<BatchDim> &result);
  /// `out` carries the batch where `in` does, in the same place.
  LogicalResult passThrough(Value in, Value out);
  LogicalResult visitBroadcast(Operation *op);
  /// A cumulative sum along another dim than the batch's.
  LogicalResult visitCumSum(CumSumOp op);
  /// The input broadcast against the result's shape.
  LogicalResult visitBroadcastTo(BroadcastToOp op);
  /// A softmax along another dim than the batch's.
  LogicalResult visitSoftmax(SoftmaxOp op);
  LogicalResult visitReduceSum(ReduceSumOp op);
  /// A normalization over the dims from `axis` on, all after the batch's;
  /// the scale and bias do not carry it.
  LogicalResult visitLayerNorm(LayerNormOp op);
  /// Convolutions, poolings and batch norms: the batch is dim 0.
  LogicalResult visitImage(Operation *op);
  /// The batch dim follows the permutation.
  LogicalResult visitTranspose(TransposeOp op);
  /// A split along another dim than the batch's: each part carries it.
  LogicalResult visitSplit(SplitOp op);
  /// A slice that keeps the batch dim whole.
  LogicalResult visitSlice(SliceOp op);
  /// A concatenation along another dim than the batch's, the operands
  /// aligned like a broadcast.
  LogicalResult visitConcat(ConcatOp op);
  /// The batch dim moves up past the inserted dims before it.
  LogicalResult visitUnsqueeze(UnsqueezeOp op);
  LogicalResult visitMatMul(MatMulOp op);
  /// The batch among q's, k's and v's leading dims (and the bias's, which
  /// broadcast against them), never in their rows or features.
  LogicalResult visitAttention(AttentionOp op);
  LogicalResult visitGemm(GemmOp op);
  LogicalResult visitLinear(LinearOp op);
  LogicalResult visitGather(GatherOp op);
  LogicalResult visitReshape(ReshapeOp op);
  LogicalResult visitCrossEntropy(CrossEntropyOp op);
  LogicalResult visitMSE(MSEOp op);
  /// A layer's inputs into its body's arguments.
  LogicalResult visitLayer(LayerOp op);
  /// A layer body's yielded values into the layer's results.
  LogicalResult visitYield(YieldOp op);
  /// The function's results carry the batch, if at all, as the outermost
  /// factor of dim 0.
  LogicalResult visitReturn(func::ReturnOp op);
  LogicalResult visitOther(Operation *op);

  func::FuncOp func;
  int64_t batch;
  int64_t m;
  llvm::MapVector<Value, BatchDim> state;
  SmallVector<ConstantSlice> constantSlices;
};

} // namespace

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

InFlightDiagnostic Microbatcher::mixes(Operation *op, unsigned operand,
                                       BatchDim b) {
  return op->emitError("cannot micro-batch: '")
         << op->getName() << "' mixes samples along the batch dimension (dim "
         << b.dim << " of operand #" << operand << " of type "
         << op->getOperand(operand).getType() << ")";
}

InFlightDiagnostic Microbatcher::unsupported(Operation *op, unsigned operand,
                                             BatchDim b, StringRef what) {
  return op->emitError("cannot micro-batch: '")
         << op->getName() << "' " << what << " (dim " << b.dim
         << " of operand #" << operand << " of type "
         << op->getOperand(operand).getType() << ")";
}

//===----------------------------------------------------------------------===//
// Batch-sized constants
//===----------------------------------------------------------------------===//

/// Views a tensor of `shape` whose dim `b.dim` is outer * batch * inner as
/// [rows, batch, cols] and returns (rows, cols).
static std::pair<int64_t, int64_t> batchView(ArrayRef<int64_t> shape,
                                             BatchDim b) {
  return {numElements(shape.take_front(b.dim)) * b.outer,
          numElements(shape.drop_front(b.dim + 1)) * b.inner};
}

/// Whether all `batch` slices of `values` (a [rows, batch, cols] view) are
/// equal, comparing elements with `equal(i, j)` on flat indices.
template <typename EqualFn>
static bool slicesIdentical(int64_t rows, int64_t batch, int64_t cols,
                            EqualFn equal) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t s = 1; s < batch; ++s)
      for (int64_t c = 0; c < cols; ++c)
        if (!equal((r * batch + s) * cols + c, r * batch * cols + c))
          return false;
  return true;
}

/// The first `keep` of the `batch` slices of `value`, or null when its
/// slices differ or its storage cannot be read.
static ElementsAttr sliceConstant(ElementsAttr value, BatchDim b, int64_t batch,
                                  int64_t keep, std::string &why) {
  auto type = cast<RankedTensorType>(value.getType());
  Shape shape(type.getShape());
  shape[b.dim] = shape[b.dim] / batch * keep;
  auto newType = RankedTensorType::get(shape, type.getElementType());
  auto [rows, cols] = batchView(type.getShape(), b);

  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    if (dense.isSplat())
      return dense.resizeSplat(newType);
    SmallVector<Attribute> elements(dense.getValues<Attribute>());
    if (!slicesIdentical(rows, batch, cols, [&](int64_t i, int64_t j) {
          return elements[i] == elements[j];
        })) {
      why = "its slices along the batch differ";
      return {};
    }
    SmallVector<Attribute> kept;
    kept.reserve(rows * keep * cols);
    for (int64_t r = 0; r < rows; ++r)
      kept.append(elements.begin() + r * batch * cols,
                  elements.begin() + (r * batch + keep) * cols);
    return DenseElementsAttr::get(newType, kept);
  }

  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    unsigned bits = type.getElementTypeBitWidth();
    if (!blob || bits % 8 != 0) {
      why = "its resource data cannot be read";
      return {};
    }
    ArrayRef<char> data = blob->getData();
    int64_t bytes = bits / 8;
    if (static_cast<int64_t>(data.size()) != type.getNumElements() * bytes) {
      why = "its resource data has the wrong size";
      return {};
    }
    if (!slicesIdentical(rows, batch, cols, [&](int64_t i, int64_t j) {
          return std::equal(data.begin() + i * bytes,
                            data.begin() + (i + 1) * bytes,
                            data.begin() + j * bytes);
        })) {
      why = "its slices along the batch differ";
      return {};
    }
    SmallVector<char> kept;
    kept.reserve(rows * keep * cols * bytes);
    for (int64_t r = 0; r < rows; ++r)
      kept.append(data.begin() + r * batch * cols * bytes,
                  data.begin() + (r * batch + keep) * cols * bytes);
    return DenseElementsAttr::getFromRawBuffer(newType, kept);
  }

  why = "its value is not a dense or dense_resource attribute";
  return {};
}

LogicalResult Microbatcher::absorb(Operation *op, OpOperand &operand,
                                   int64_t dim, BatchDim b) {
  BatchDim where{dim, b.outer, b.inner};
  auto constant = operand.get().getDefiningOp<ConstantOp>();
  std::string why = "it does not come from the arguments";
  if (constant &&
      sliceConstant(constant.getValue(), where, batch, batch / m, why))
    return constantSlices.push_back({&operand, where}), success();
  // A batch-free tensor repeated along that dim (a class token broadcast to
  // the batch): every slice is the same, so a smaller broadcast serves.
  if (auto repeat = operand.get().getDefiningOp<BroadcastToOp>()) {
    int64_t inDim =
        dim - static_cast<int64_t>(shapeOf(repeat.getResult()).size() -
                                   shapeOf(repeat.getInput()).size());
    if (!lookup(repeat.getInput()) &&
        (inDim < 0 || shapeOf(repeat.getInput())[inDim] == 1))
      return constantSlices.push_back({&operand, where}), success();
    why = "it is broadcast from a tensor that has that size there";
  }
  // Rows of a batch-free table picked by constant indices that repeat for
  // every sample (OPT's position embedding of a mask of ones): a gather by
  // the first B/M slices of the indices serves.
  if (auto gather = operand.get().getDefiningOp<GatherOp>()) {
    auto indices = gather.getIndices().getDefiningOp<ConstantOp>();
    int64_t axis = gather.getAxis();
    int64_t indicesRank = shapeOf(gather.getIndices()).size();
    if (indices && !lookup(gather.getData()) && dim >= axis &&
        dim < axis + indicesRank) {
      std::string sliceWhy;
      if (sliceConstant(indices.getValue(), {dim - axis, b.outer, b.inner},
                        batch, batch / m, sliceWhy))
        return constantSlices.push_back({&operand, where}), success();
      why = "it gathers by constant indices that differ per sample (" +
            sliceWhy + ")";
    }
  }
  return op->emitError("cannot micro-batch: operand #")
         << operand.getOperandNumber() << " of '" << op->getName()
         << "' of type " << operand.get().getType() << " has size "
         << shapeOf(operand.get())[dim] << " in dim " << dim
         << ", where the batch is, but does not carry the batch: " << why;
}

//===----------------------------------------------------------------------===//
// Transfer functions
//===----------------------------------------------------------------------===//

LogicalResult
Microbatcher::broadcast(Operation *op,
                        ArrayRef<std::pair<OpOperand *, int64_t>> operands,
                        int64_t resultRank, std::optional<BatchDim> &result) {
  // Batch-carrying operands first: they fix the result dim.
  for (auto [operand, rank] : operands) {
    std::optional<BatchDim> b = lookup(operand->get());
    if (!b)
      continue;
    unsigned index = operand->getOperandNumber();
    if (b->dim >= rank)
      return mixes(op, index, *b), failure();
    BatchDim aligned{b->dim + resultRank - rank, b->outer, b->inner};
    if (!result) {
      result = aligned;
      continue;
    }
    if (result->dim != aligned.dim || !result->sameFactor(aligned))
      return mixes(op, index, *b), failure();
  }
  if (!result)
    return success();
  for (auto [operand, rank] : operands) {
    if (lookup(operand->get()))
      continue;
    int64_t dim = result->dim - (resultRank - rank);
    if (dim < 0 || shapeOf(operand->get())[dim] == 1)
      continue;
    if (failed(absorb(op, *operand, dim, *result)))
      return failure();
  }
  return success();
}

LogicalResult Microbatcher::visitBroadcast(Operation *op) {
  SmallVector<std::pair<OpOperand *, int64_t>> operands;
  for (OpOperand &operand : op->getOpOperands())
    operands.push_back({&operand, (int64_t)shapeOf(operand.get()).size()});
  std::optional<BatchDim> result;
  if (failed(broadcast(op, operands, shapeOf(op->getResult(0)).size(), result)))
    return failure();
  if (result)
    set(op->getResult(0), *result);
  return success();
}

LogicalResult Microbatcher::visitMatMul(MatMulOp op) {
  int64_t rl = shapeOf(op.getLhs()).size(), rr = shapeOf(op.getRhs()).size();
  int64_t rank = shapeOf(op.getResult()).size();
  std::optional<BatchDim> lb = lookup(op.getLhs()), rb = lookup(op.getRhs());
  // Where each operand's rows, columns and contracted dim are stored.
  bool ta = op.getTransLhs(), tb = op.getTransRhs();
  int64_t lhsRowDim = ta ? rl - 1 : rl - 2, lhsInnerDim = ta ? rl - 2 : rl - 1;
  int64_t rhsInnerDim = tb ? rr - 1 : rr - 2, rhsColDim = tb ? rr - 2 : rr - 1;
  if (lb && lb->dim == lhsInnerDim)
    return mixes(op, 0, *lb), failure();
  if (rb && rb->dim == rhsInnerDim)
    return mixes(op, 1, *rb), failure();
  bool lhsRows = lb && lb->dim == lhsRowDim,
       rhsCols = rb && rb->dim == rhsColDim;
  // Samples of the rows paired with samples of the columns: an outer
  // product over the batch.
  if ((lhsRows || rhsCols) && lb && rb)
    return mixes(op, lhsRows ? 1 : 0, lhsRows ? *rb : *lb), failure();
  if (lhsRows)
    return set(op.getResult(), {rank - 2, lb->outer, lb->inner}), success();
  if (rhsCols)
    return set(op.getResult(), {rank - 1, rb->outer, rb->inner}), success();
  // Leading (batch-of-matrices) dims broadcast.
  std::optional<BatchDim> result;
  if (failed(broadcast(
          op, {{&op.getLhsMutable(), rl - 2}, {&op.getRhsMutable(), rr - 2}},
          rank - 2, result)))
    return failure();
  if (result)
    set(op.getResult(), *result);
  return success();
}

LogicalResult Microbatcher::visitAttention(AttentionOp op) {
  int64_t rank = shapeOf(op.getResult()).size();
  SmallVector<std::pair<OpOperand *, int64_t>> operands;
  for (OpOperand &operand : op->getOpOperands()) {
    int64_t r = shapeOf(operand.get()).size();
    int64_t leading = std::max<int64_t>(r - 2, 0);
    if (std::optional<BatchDim> b = lookup(operand.get());
        b && b->dim >= leading)
      return mixes(op, operand.getOperandNumber(), *b), failure();
    operands.push_back({&operand, leading});
  }
  std::optional<BatchDim> result;
  if (failed(broadcast(op, operands, rank - 2, result)))
    return failure();
  if (result)
    set(op.getResult(), *result);
  return success();
}

LogicalResult Microbatcher::visitGemm(GemmOp op) {
  std::optional<BatchDim> ab = lookup(op.getA()), bb = lookup(op.getB());
  int64_t aRows = op.getTransA() ? 1 : 0, bCols = op.getTransB() ? 0 : 1;
  if (ab && ab->dim != aRows)
    return mixes(op, 0, *ab), failure();
  if (bb && bb->dim != bCols)
    return mixes(op, 1, *bb), failure();
  if (ab && bb)
    return mixes(op, 1, *bb), failure();
  std::optional<BatchDim> result;
  if (ab)
    result = BatchDim{0, ab->outer, ab->inner};
  if (bb)
    result = BatchDim{1, bb->outer, bb->inner};
  if (op.getC() &&
      failed(broadcast(
          op, {{&op->getOpOperand(2), (int64_t)shapeOf(op.getC()).size()}}, 2,
          result)))
    return failure();
  if (result)
    set(op.getResult(), *result);
  return success();
}

LogicalResult Microbatcher::visitLinear(LinearOp op) {
  int64_t rank = shapeOf(op.getInput()).size();
  std::optional<BatchDim> ib = lookup(op.getInput()),
                          wb = lookup(op.getWeight());
  int64_t wOut = op.getTransposeWeight() ? 0 : 1;
  if (ib && ib->dim == rank - 1)
    return mixes(op, 0, *ib), failure();
  if (wb && (wb->dim != wOut || ib))
    return mixes(op, 1, *wb), failure();
  std::optional<BatchDim> result;
  if (ib)
    result = *ib;
  if (wb)
    result = BatchDim{rank - 1, wb->outer, wb->inner};
  if (op.getBias() &&
      failed(broadcast(op, {{&op->getOpOperand(2), 1}}, rank, result)))
    return failure();
  if (result)
    set(op.getResult(), *result);
  return success();
}

LogicalResult Microbatcher::visitGather(GatherOp op) {
  int64_t axis = op.getAxis();
  int64_t indicesRank = shapeOf(op.getIndices()).size();
  std::optional<BatchDim> db = lookup(op.getData()),
                          ib = lookup(op.getIndices());
  // Each sample's indices would pick among all samples' rows.
  if (db && (db->dim == axis || ib))
    return mixes(op, 0, *db), failure();
  if (ib)
    set(op.getResult(), {axis + ib->dim, ib->outer, ib->inner});
  else if (db)
    set(op.getResult(), {db->dim < axis ? db->dim : db->dim - 1 + indicesRank,
                         db->outer, db->inner});
  return success();
}

/// The batch of a reshape's input occupies the row-major span [lo, hi) of
/// strides (lo = product of the dims inside it, times `inner`; hi = lo * B).
/// The result keeps it in dim j when j's span [olo, ohi) contains it with
/// olo dividing lo and hi dividing ohi: dim j is then
/// (ohi / hi) * B * (lo / olo). Otherwise the batch is cut across dims (or
/// across a factor boundary) and samples mix.
LogicalResult Microbatcher::visitReshape(ReshapeOp op) {
  std::optional<BatchDim> b = lookup(op.getInput());
  if (!b)
    return success();
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op.getResult());
  if (numElements(in) == 0)
    return unsupported(op, 0, *b, "reshapes an empty tensor"), failure();
  int64_t lo = numElements(in.drop_front(b->dim + 1)) * b->inner;
  int64_t hi = lo * batch;
  int64_t olo = 1;
  for (int64_t j = out.size() - 1; j >= 0; --j) {
    int64_t ohi = olo * out[j];
    if (olo <= lo && hi <= ohi && lo % olo == 0 && ohi % hi == 0) {
      set(op.getResult(), {j, ohi / hi, lo / olo});
      return success();
    }
    olo = ohi;
  }
  return mixes(op, 0, *b) << ": the result " << op.getType()
                          << " does not keep the batch of " << batch
                          << " whole within one dim";
}

LogicalResult Microbatcher::visitCrossEntropy(CrossEntropyOp op) {
  int64_t rank = shapeOf(op.getLogits()).size();
  std::optional<BatchDim> lb = lookup(op.getLogits()),
                          tb = lookup(op.getLabels());
  if (lb && lb->dim == rank - 1)
    return mixes(op, 0, *lb), failure();
  if (lb && tb && (lb->dim != tb->dim || !lb->sameFactor(*tb)))
    return mixes(op, 1, *tb), failure();
  if (lb && !tb)
    return absorb(op, op.getLabelsMutable(), lb->dim, *lb);
  if (tb && !lb)
    return absorb(op, op.getLogitsMutable(), tb->dim, *tb);
  // The loss is the mean over the micro-batch; the pipeline scales it by
  // 1/M, which gives the mean over the mini-batch.
  return success();
}

/// Ops with regions other than nn.layer, and ops this pass does not know:
/// fine as long as the batch does not reach them.
LogicalResult Microbatcher::visitOther(Operation *op) {
  for (OpOperand &operand : op->getOpOperands())
    if (std::optional<BatchDim> b = lookup(operand.get()))
      return unsupported(op, operand.getOperandNumber(), *b,
                         "is not known to keep samples apart"),
             failure();
  if (op->getNumRegions() != 0) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    for (Value v : captured)
      if (lookup(v))
        return op->emitError("cannot micro-batch: '")
               << op->getName() << "' uses a batch-carrying value of type "
               << v.getType() << " in its regions";
  }
  return success();
}

LogicalResult Microbatcher::passThrough(Value in, Value out) {
  if (std::optional<BatchDim> b = lookup(in))
    set(out, *b);
  return success();
}

LogicalResult Microbatcher::visitCumSum(CumSumOp op) {
  std::optional<BatchDim> b = lookup(op.getInput());
  if (b && b->dim == static_cast<int64_t>(op.getAxis()))
    return mixes(op, 0, *b), failure();
  return passThrough(op.getInput(), op.getResult());
}

LogicalResult Microbatcher::visitBroadcastTo(BroadcastToOp op) {
  int64_t rank = shapeOf(op.getResult()).size();
  std::optional<BatchDim> result;
  if (failed(broadcast(
          op, {{&op.getInputMutable(), (int64_t)shapeOf(op.getInput()).size()}},
          rank, result)))
    return failure();
  if (result)
    set(op.getResult(), *result);
  return success();
}

LogicalResult Microbatcher::visitSoftmax(SoftmaxOp op) {
  std::optional<BatchDim> b = lookup(op.getInput());
  if (b && b->dim == static_cast<int64_t>(op.getAxis()))
    return mixes(op, 0, *b), failure();
  return passThrough(op.getInput(), op.getResult());
}

/// A sum over other dims keeps samples apart; the batch dim moves down past
/// the dropped dims before it.
LogicalResult Microbatcher::visitReduceSum(ReduceSumOp op) {
  std::optional<BatchDim> b = lookup(op.getInput());
  if (!b)
    return success();
  ArrayRef<int64_t> axes = op.getAxes();
  if (llvm::is_contained(axes, b->dim))
    return mixes(op, 0, *b), failure();
  BatchDim r = *b;
  if (!op.getKeepDims())
    r.dim -= llvm::count_if(axes, [&](int64_t a) { return a < b->dim; });
  set(op.getResult(), r);
  return success();
}

LogicalResult Microbatcher::visitLayerNorm(LayerNormOp op) {
  std::optional<BatchDim> b = lookup(op.getInput());
  if (b && b->dim >= static_cast<int64_t>(op.getAxis()))
    return mixes(op, 0, *b), failure();
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    if (std::optional<BatchDim> pb = lookup(op->getOperand(i)))
      return mixes(op, i, *pb), failure();
  return passThrough(op.getInput(), op.getResult());
}

/// Images are independent along dim 0, the batch; weights, biases and
/// statistics must not carry it.
LogicalResult Microbatcher::visitImage(Operation *op) {
  std::optional<BatchDim> b = lookup(op->getOperand(0));
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    if (std::optional<BatchDim> pb = lookup(op->getOperand(i)))
      return mixes(op, i, *pb), failure();
  if (!b)
    return success();
  if (b->dim != 0)
    return mixes(op, 0, *b), failure();
  // nn.batch_norm normalizes each micro-batch with its own statistics:
  // GPipe's semantics, chosen on purpose.
  if (isa<BatchNormOp>(op) && b->outer != 1)
    return unsupported(op, 0, *b,
                       "normalizes over samples interleaved with other data"),
           failure();
  return passThrough(op->getOperand(0), op->getResult(0));
}

LogicalResult Microbatcher::visitTranspose(TransposeOp op) {
  if (std::optional<BatchDim> b = lookup(op.getInput())) {
    ArrayRef<int64_t> perm = op.getPerm();
    int64_t dim = llvm::find(perm, b->dim) - perm.begin();
    set(op.getResult(), {dim, b->outer, b->inner});
  }
  return success();
}

LogicalResult Microbatcher::visitSplit(SplitOp op) {
  std::optional<BatchDim> b = lookup(op.getInput());
  if (!b)
    return success();
  if (b->dim == static_cast<int64_t>(op.getAxis()))
    return unsupported(op, 0, *b, "splits the batch dimension"), failure();
  for (Value r : op.getResults())
    set(r, *b);
  return success();
}

LogicalResult Microbatcher::visitSlice(SliceOp op) {
  std::optional<BatchDim> b = lookup(op.getInput());
  if (!b)
    return success();
  int64_t d = b->dim;
  if (op.getOffsets()[d] != 0 || op.getStrides()[d] != 1 ||
      op.getSizes()[d] != shapeOf(op.getInput())[d])
    return unsupported(op, 0, *b, "takes part of the batch dimension"),
           failure();
  set(op.getResult(), *b);
  return success();
}

LogicalResult Microbatcher::visitConcat(ConcatOp op) {
  int64_t rank = shapeOf(op.getResult()).size();
  SmallVector<std::pair<OpOperand *, int64_t>> operands;
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<BatchDim> b = lookup(operand.get());
    if (b && b->dim == static_cast<int64_t>(op.getAxis()))
      return unsupported(op, operand.getOperandNumber(), *b,
                         "concatenates along the batch dimension"),
             failure();
    operands.push_back({&operand, rank});
  }
  std::optional<BatchDim> result;
  if (failed(broadcast(op, operands, rank, result)))
    return failure();
  if (result)
    set(op.getResult(), *result);
  return success();
}

LogicalResult Microbatcher::visitUnsqueeze(UnsqueezeOp op) {
  if (std::optional<BatchDim> b = lookup(op.getInput())) {
    ArrayRef<int64_t> axes = op.getAxes();
    int64_t rank = shapeOf(op.getResult()).size(), dim = 0;
    for (int64_t kept = 0; dim < rank; ++dim)
      if (!llvm::is_contained(axes, dim) && kept++ == b->dim)
        break;
    set(op.getResult(), {dim, b->outer, b->inner});
  }
  return success();
}

/// Input and target have one shape; the loss is not batched.
LogicalResult Microbatcher::visitMSE(MSEOp op) {
  int64_t rank = shapeOf(op.getInput()).size();
  std::optional<BatchDim> result;
  return broadcast(
      op, {{&op.getInputMutable(), rank}, {&op.getTargetMutable(), rank}}, rank,
      result);
}

LogicalResult Microbatcher::visitLayer(LayerOp op) {
  for (auto [in, arg] :
       llvm::zip(op.getInputs(), op.getBodyBlock().getArguments()))
    (void)passThrough(in, arg);
  return success();
}

LogicalResult Microbatcher::visitYield(YieldOp op) {
  auto layer = cast<LayerOp>(op->getParentOp());
  for (auto [v, r] : llvm::zip(op.getValues(), layer.getResults()))
    (void)passThrough(v, r);
  return success();
}

LogicalResult Microbatcher::visitReturn(func::ReturnOp op) {
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<BatchDim> b = lookup(operand.get());
    if (b && (b->dim != 0 || b->outer != 1))
      return op.emitError("cannot micro-batch: result #")
             << operand.getOperandNumber() << " of type "
             << operand.get().getType()
             << " does not carry the batch as the outermost factor of "
                "dim 0 (it is in dim "
             << b->dim << ")";
  }
  return success();
}

LogicalResult Microbatcher::visit(Operation *op) {
  if (op->hasTrait<mlir::OpTrait::SameOperandsAndResultType>() &&
      op->getNumOperands() == 1 && op->getNumResults() == 1 &&
      op->getNumRegions() == 0 && isa_and_nonnull<NNDialect>(op->getDialect()))
    return passThrough(op->getOperand(0), op->getResult(0));

  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, RemainderOp,
            FModOp, EqualOp, CompareOp, LogicalOp, WhereOp, ClipGradOp>(
          [&](Operation *op) { return visitBroadcast(op); })
      .Case<CumSumOp>([&](CumSumOp op) { return visitCumSum(op); })
      .Case<BroadcastToOp>(
          [&](BroadcastToOp op) { return visitBroadcastTo(op); })
      .Case<CastOp>(
          [&](CastOp op) { return passThrough(op.getInput(), op.getResult()); })
      .Case<ParamOp, ConstantOp>([](Operation *) { return success(); })
      .Case<MatMulOp>([&](MatMulOp op) { return visitMatMul(op); })
      .Case<AttentionOp>([&](AttentionOp op) { return visitAttention(op); })
      .Case<GemmOp>([&](GemmOp op) { return visitGemm(op); })
      .Case<LinearOp>([&](LinearOp op) { return visitLinear(op); })
      .Case<SoftmaxOp>([&](SoftmaxOp op) { return visitSoftmax(op); })
      .Case<ReduceSumOp>([&](ReduceSumOp op) { return visitReduceSum(op); })
      .Case<LayerNormOp>([&](LayerNormOp op) { return visitLayerNorm(op); })
      .Case<Conv2DOp, MaxPool2DOp, AvgPool2DOp, BatchNormOp>(
          [&](Operation *op) { return visitImage(op); })
      .Case<GatherOp>([&](GatherOp op) { return visitGather(op); })
      .Case<ReshapeOp>([&](ReshapeOp op) { return visitReshape(op); })
      .Case<TransposeOp>([&](TransposeOp op) { return visitTranspose(op); })
      .Case<SplitOp>([&](SplitOp op) { return visitSplit(op); })
      .Case<SliceOp>([&](SliceOp op) { return visitSlice(op); })
      .Case<ConcatOp>([&](ConcatOp op) { return visitConcat(op); })
      .Case<UnsqueezeOp>([&](UnsqueezeOp op) { return visitUnsqueeze(op); })
      .Case<CrossEntropyOp>(
          [&](CrossEntropyOp op) { return visitCrossEntropy(op); })
      .Case<MSEOp>([&](MSEOp op) { return visitMSE(op); })
      .Case<LayerOp>([&](LayerOp op) { return visitLayer(op); })
      .Case<YieldOp>([&](YieldOp op) { return visitYield(op); })
      .Case<func::ReturnOp>([&](func::ReturnOp op) { return visitReturn(op); })
      .Default([&](Operation *op) { return visitOther(op); });
}

LogicalResult Microbatcher::analyze() {
  for (BlockArgument arg : func.getArguments())
    set(arg, {0, 1, 1});
  WalkResult walk =
      func.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (failed(visit(op)))
          return WalkResult::interrupt();
        // visitOther has checked the regions of ops it does not know.
        if (op->getNumRegions() != 0 && !isa<LayerOp>(op))
          return WalkResult::skip();
        return WalkResult::advance();
      });
  return failure(walk.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

void Microbatcher::rewrite() {
  auto divided = [&](Type type, BatchDim b) {
    auto tensor = cast<RankedTensorType>(type);
    Shape shape(tensor.getShape());
    shape[b.dim] /= m;
    return RankedTensorType::get(shape, tensor.getElementType(),
                                 tensor.getEncoding());
  };

  // Slice sizes on the batch dim read the old type: update them first.
  func.walk([&](SliceOp op) {
    std::optional<BatchDim> b = lookup(op.getInput());
    if (!b)
      return;
    SmallVector<int64_t> sizes(op.getSizes());
    sizes[b->dim] /= m;
    op.setSizes(sizes);
  });

  // One sliced copy per constant and batch position, next to the original.
  DenseMap<std::tuple<Operation *, int64_t, int64_t, int64_t>, Value> sliced;
  SmallVector<Operation *> maybeDead;
  for (ConstantSlice &slice : constantSlices) {
    BatchDim w = slice.where;
    if (auto repeat = slice.use->get().getDefiningOp<BroadcastToOp>()) {
      Value &copy = sliced[{repeat, w.dim, w.outer, w.inner}];
      if (!copy) {
        OpBuilder builder(repeat);
        builder.setInsertionPointAfter(repeat);
        copy = BroadcastToOp::create(builder, repeat.getLoc(),
                                     divided(repeat.getType(), w),
                                     repeat.getInput());
        maybeDead.push_back(repeat);
      }
      slice.use->set(copy);
      continue;
    }
    if (auto gather = slice.use->get().getDefiningOp<GatherOp>()) {
      Value &copy = sliced[{gather, w.dim, w.outer, w.inner}];
      if (!copy) {
        auto indices = gather.getIndices().getDefiningOp<ConstantOp>();
        BatchDim at{w.dim - int64_t(gather.getAxis()), w.outer, w.inner};
        std::string why;
        ElementsAttr value =
            sliceConstant(indices.getValue(), at, batch, batch / m, why);
        OpBuilder builder(gather);
        builder.setInsertionPointAfter(gather);
        Value fewer = ConstantOp::create(builder, indices.getLoc(), value);
        copy = GatherOp::create(builder, gather.getLoc(),
                                divided(gather.getType(), w), gather.getData(),
                                fewer, gather.getAxis());
        maybeDead.push_back(gather);
      }
      slice.use->set(copy);
      continue;
    }
    auto constant = slice.use->get().getDefiningOp<ConstantOp>();
    Value &copy = sliced[{constant, w.dim, w.outer, w.inner}];
    if (!copy) {
      std::string why;
      ElementsAttr value =
          sliceConstant(constant.getValue(), w, batch, batch / m, why);
      OpBuilder builder(constant);
      builder.setInsertionPointAfter(constant);
      copy = ConstantOp::create(builder, constant.getLoc(), value);
      maybeDead.push_back(constant);
    }
    slice.use->set(copy);
  }
  for (Operation *op : maybeDead)
    if (op->use_empty())
      op->erase();

  for (auto &[value, b] : state)
    value.setType(divided(value.getType(), b));

  func.setFunctionType(FunctionType::get(
      func.getContext(), func.getBody().getArgumentTypes(),
      func.getBody().front().getTerminator()->getOperandTypes()));
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

LogicalResult mlir::gpipe::nn::microbatchFunction(func::FuncOp func, int64_t m,
                                                  int64_t replicas) {
  if (m < 1)
    return func.emitError("expected a positive number of micro-batches, got ")
           << m;
  if (replicas < 1)
    return func.emitError(
               "expected a positive number of data-parallel replicas, got ")
           << replicas;
  // What the batch is divided into, in the user's terms.
  std::string parts = std::to_string(m) + " micro-batches";
  if (replicas > 1) {
    if (m > std::numeric_limits<int64_t>::max() / replicas)
      return func.emitError("cannot micro-batch: ")
             << m << " micro-batches x " << replicas << " replicas is too many";
    parts += " x " + std::to_string(replicas) + " replicas";
    m *= replicas;
  }
  if (m == 1)
    return success();
  if (func.isExternal() || !func.getBody().hasOneBlock() ||
      !isa<func::ReturnOp>(func.getBody().front().getTerminator()))
    return func.emitError("cannot micro-batch '")
           << func.getSymName()
           << "': expected a network body of one block ending in func.return";
  if (func.getNumArguments() == 0)
    return func.emitError("cannot micro-batch '")
           << func.getSymName()
           << "': it has no arguments to take the batch from";

  // The batch is dim 0 of every argument.
  std::optional<int64_t> batch;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0 || !type.hasStaticShape())
      return emitError(arg.getLoc(), "cannot micro-batch argument ")
             << arg.getArgNumber() << " of type " << arg.getType()
             << ": expected a statically shaped tensor with the batch in dim "
                "0";
    int64_t b = type.getDimSize(0);
    if (!batch) {
      if (b == 0)
        return emitError(arg.getLoc(), "argument ")
               << arg.getArgNumber() << " has an empty batch";
      if (b % m != 0)
        return emitError(arg.getLoc(), "batch ")
               << b << " of argument " << arg.getArgNumber()
               << " is not divisible by " << parts;
      batch = b;
    } else if (b != *batch) {
      return emitError(arg.getLoc(), "argument ")
             << arg.getArgNumber() << " has batch " << b
             << " but argument 0 has batch " << *batch;
    }
  }

  Microbatcher microbatcher(func, *batch, m);
  if (failed(microbatcher.analyze()))
    return failure();
  microbatcher.rewrite();
  if (failed(mlir::verify(func)))
    return func.emitError("nn-microbatch produced invalid IR for '")
           << func.getSymName() << "'";
  return success();
}

namespace {
struct NNMicrobatchPass
    : public mlir::gpipe::nn::impl::NNMicrobatchPassBase<NNMicrobatchPass> {
  using NNMicrobatchPassBase::NNMicrobatchPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(funcName);
    if (!func) {
      module.emitError("nn-microbatch: no function '")
          << funcName << "' in the module";
      return signalPassFailure();
    }
    if (failed(microbatchFunction(func, microbatches, replicas)))
      signalPassFailure();
  }
};
} // namespace
