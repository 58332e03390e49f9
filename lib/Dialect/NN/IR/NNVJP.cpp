//===- NNVJP.cpp - Vector-Jacobian products of the nn ops -----------------===//
//
// Implements `VJPOpInterface::buildVJP` for every differentiable `nn` op:
// given the gradients of an op's results, it builds the gradients of its
// operands with other `nn` ops at the builder's insertion point. Broadcast
// operands get the gradient summed over their broadcast dims
// (`nn.reduce_sum`) and reshaped to their own shape. Softmax, layer norm,
// GELU, cross-entropy and gather use the fused `*_grad` kernels; everything
// else is a composition of primitive ops. A rule may read the op's operands
// and results: the backward function recomputes the forward, so both are
// available. Non-differentiable operands (integer indices, labels, masks)
// get a null gradient.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::gpipe::nn;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// A splat constant of the float tensor type `type`.
static Value splat(OpBuilder &b, Location loc, RankedTensorType type,
                   double value) {
  Attribute element = FloatAttr::get(type.getElementType(), value);
  auto attr = DenseElementsAttr::get(type, ArrayRef<Attribute>(element));
  return ConstantOp::create(b, loc, cast<ElementsAttr>(attr));
}

/// A 0-D constant of the float element type of `like`.
static Value scalar(OpBuilder &b, Location loc, Value like, double value) {
  return splat(b, loc,
               RankedTensorType::get({}, tensorTypeOf(like).getElementType()),
               value);
}

static Value zerosOf(OpBuilder &b, Location loc, Type type) {
  return splat(b, loc, cast<RankedTensorType>(type), 0.0);
}

/// The gradient of an operand of type `target` that was broadcast to the
/// shape of `grad`: `grad` summed over the leading dims `target` lacks and
/// over the dims where `target` has size 1, then reshaped to `target`.
static Value unbroadcast(OpBuilder &b, Location loc, Value grad, Type target) {
  if (grad.getType() == target)
    return grad;
  ArrayRef<int64_t> from = tensorTypeOf(grad).getShape();
  ArrayRef<int64_t> to = cast<RankedTensorType>(target).getShape();
  size_t lead = from.size() - to.size();
  SmallVector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  Value result = grad;
  if (!axes.empty())
    result = ReduceSumOp::create(b, loc, grad, axes, /*keepDims=*/false);
  if (result.getType() != target)
    result = ReshapeOp::create(b, loc, target, result);
  return result;
}

/// `v` as a matrix `[rows, lastDim]`.
static Value flattenToMatrix(OpBuilder &b, Location loc, Value v) {
  RankedTensorType type = tensorTypeOf(v);
  int64_t last = type.getShape().back();
  auto matrix = RankedTensorType::get(
      {numElements(type.getShape()) / std::max<int64_t>(last, 1), last},
      type.getElementType());
  if (matrix == type)
    return v;
  return ReshapeOp::create(b, loc, matrix, v);
}

static Value gemm(OpBuilder &b, Location loc, Type result, Value lhs, Value rhs,
                  float alpha, bool transA, bool transB) {
  return GemmOp::create(b, loc, result, lhs, rhs, Value(), llvm::APFloat(alpha),
                        llvm::APFloat(1.0f), transA, transB);
}

/// Starts a VJP: one null gradient per operand, and the single result
/// gradient (null when there is none or the result is not a float tensor).
static Value beginVJP(Operation *op, ValueRange resultGrads,
                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  if (resultGrads.size() != 1 || !resultGrads[0] ||
      !isFloatTensor(op->getResult(0).getType()))
    return {};
  return resultGrads[0];
}

//===----------------------------------------------------------------------===//
// Sources and non-differentiable ops
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::buildVJP(OpBuilder &, ValueRange,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.clear();
  return success();
}

LogicalResult ConstantOp::buildVJP(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.clear();
  return success();
}

LogicalResult EqualOp::buildVJP(OpBuilder &, ValueRange,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign((*this)->getNumOperands(), Value());
  return success();
}

LogicalResult NotOp::buildVJP(OpBuilder &, ValueRange,
                              SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign((*this)->getNumOperands(), Value());
  return success();
}

LogicalResult CompareOp::buildVJP(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign((*this)->getNumOperands(), Value());
  return success();
}

LogicalResult LogicalOp::buildVJP(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign((*this)->getNumOperands(), Value());
  return success();
}

// The gradient of a cumulative sum is the cumulative sum the other way.
LogicalResult CumSumOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] =
        CumSumOp::create(b, getLoc(), dy.getType(), dy, getAxisAttr(),
                         getExclusiveAttr(), b.getBoolAttr(!getReverse()));
  return success();
}

// The repeated copies' gradients summed back onto the input.
LogicalResult BroadcastToOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = unbroadcast(b, getLoc(), dy, getInput().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Binary elementwise ops
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  operandGrads[0] = unbroadcast(b, getLoc(), dy, getLhs().getType());
  operandGrads[1] = unbroadcast(b, getLoc(), dy, getRhs().getType());
  return success();
}

LogicalResult SubOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  operandGrads[0] = unbroadcast(b, loc, dy, getLhs().getType());
  // Negate after the reduction: it touches fewer elements.
  operandGrads[1] =
      NegOp::create(b, loc, unbroadcast(b, loc, dy, getRhs().getType()));
  return success();
}

LogicalResult MulOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  operandGrads[0] = unbroadcast(b, loc, MulOp::create(b, loc, dy, getRhs()),
                                getLhs().getType());
  operandGrads[1] = unbroadcast(b, loc, MulOp::create(b, loc, dy, getLhs()),
                                getRhs().getType());
  return success();
}

// y = l / r: dl = dy / r, dr = -dy * y / r.
LogicalResult DivOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  operandGrads[0] = unbroadcast(b, loc, DivOp::create(b, loc, dy, getRhs()),
                                getLhs().getType());
  Value dyY = MulOp::create(b, loc, dy, getResult());
  operandGrads[1] =
      NegOp::create(b, loc,
                    unbroadcast(b, loc, DivOp::create(b, loc, dyY, getRhs()),
                                getRhs().getType()));
  return success();
}

// y = l ^ r: dl = dy * r * l ^ (r - 1), dr = dy * y * log(l). The exponent
// gradient is defined for positive bases only (log of a negative base is
// max and min (torch.maximum's and torch.minimum's gradients): the gradient
// goes to the operand that was chosen, half to each on a tie.
static LogicalResult extremumVJP(Operation *op, bool max,
                                 ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads,
                                 OpBuilder &b) {
  Value dy = beginVJP(op, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = op->getLoc();
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  auto mask = RankedTensorType::get(tensorTypeOf(dy).getShape(), b.getI1Type());
  auto compare = [&](ComparePredicate p) {
    return CompareOp::create(b, loc, mask, p, lhs, rhs).getResult();
  };
  Value zero = scalar(b, loc, dy, 0.0);
  Value half = MulOp::create(b, loc, dy, scalar(b, loc, dy, 0.5));
  Value tie = WhereOp::create(b, loc, dy.getType(),
                              compare(ComparePredicate::eq), half, zero);
  Value lhsWins = compare(max ? ComparePredicate::gt : ComparePredicate::lt);
  Value rhsWins = compare(max ? ComparePredicate::lt : ComparePredicate::gt);
  operandGrads[0] = unbroadcast(
      b, loc, WhereOp::create(b, loc, dy.getType(), lhsWins, dy, tie),
      lhs.getType());
  operandGrads[1] = unbroadcast(
      b, loc, WhereOp::create(b, loc, dy.getType(), rhsWins, dy, tie),
      rhs.getType());
  return success();
}

LogicalResult MaxOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return extremumVJP(*this, /*max=*/true, resultGrads, operandGrads, b);
}

LogicalResult MinOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return extremumVJP(*this, /*max=*/false, resultGrads, operandGrads, b);
}

// r = a - b * q with q = floor(a / b) (remainder) or trunc(a / b) (fmod), a
// step function of the operands: dr/da = 1 and dr/db = -q = (r - a) / b
// (torch.remainder's and torch.fmod's derivatives, written with r so that
// q need not be computed again).
static LogicalResult remainderVJP(Operation *op, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads,
                                  OpBuilder &b) {
  Value dy = beginVJP(op, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = op->getLoc();
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  operandGrads[0] = unbroadcast(b, loc, dy, lhs.getType());
  Value minusQ =
      DivOp::create(b, loc, SubOp::create(b, loc, op->getResult(0), lhs), rhs);
  operandGrads[1] =
      unbroadcast(b, loc, MulOp::create(b, loc, dy, minusQ), rhs.getType());
  return success();
}

LogicalResult RemainderOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return remainderVJP(*this, resultGrads, operandGrads, b);
}

LogicalResult FModOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  return remainderVJP(*this, resultGrads, operandGrads, b);
}

// NaN); when the exponent is a constant that gradient is never used and the
// backward function drops it.
LogicalResult PowOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value l = getLhs(), r = getRhs();
  Value rMinusOne = SubOp::create(b, loc, r, scalar(b, loc, r, 1.0));
  Value dydl = MulOp::create(b, loc, r, PowOp::create(b, loc, l, rMinusOne));
  operandGrads[0] =
      unbroadcast(b, loc, MulOp::create(b, loc, dy, dydl), l.getType());
  Value dydr = MulOp::create(b, loc, getResult(), LogOp::create(b, loc, l));
  operandGrads[1] =
      unbroadcast(b, loc, MulOp::create(b, loc, dy, dydr), r.getType());
  return success();
}

// cond ? x : y: the selected side gets the gradient, the other zero; the
// condition gets none.
LogicalResult WhereOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value zero = scalar(b, loc, dy, 0.0);
  Value dx = WhereOp::create(b, loc, dy.getType(), getCondition(), dy, zero);
  Value dyElse =
      WhereOp::create(b, loc, dy.getType(), getCondition(), zero, dy);
  operandGrads[1] = unbroadcast(b, loc, dx, getX().getType());
  operandGrads[2] = unbroadcast(b, loc, dyElse, getY().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Unary elementwise ops
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = NegOp::create(b, getLoc(), dy);
  return success();
}

// y = 1 / x: dx = -dy * y * y.
LogicalResult ReciprocalOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value y = getResult();
  Value ySquared = MulOp::create(b, loc, y, y);
  operandGrads[0] = NegOp::create(b, loc, MulOp::create(b, loc, dy, ySquared));
  return success();
}

// y = sqrt(x): dx = dy * 0.5 / y.
LogicalResult SqrtOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value half = MulOp::create(b, loc, dy, scalar(b, loc, dy, 0.5));
  operandGrads[0] = DivOp::create(b, loc, half, getResult());
  return success();
}

// y = e^x: dx = dy * y.
LogicalResult ExpOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = MulOp::create(b, getLoc(), dy, getResult());
  return success();
}

// Floor, ceil and round are piecewise constant: their derivative is 0
// wherever it exists (PyTorch's too), so no gradient flows back.
#define NN_NO_GRADIENT(OP)                                                     \
  LogicalResult OP::buildVJP(OpBuilder &, ValueRange resultGrads,              \
                             SmallVectorImpl<Value> &operandGrads) {           \
    beginVJP(*this, resultGrads, operandGrads);                                \
    return success();                                                          \
  }
NN_NO_GRADIENT(FloorOp)
NN_NO_GRADIENT(CeilOp)
NN_NO_GRADIENT(RoundOp)
#undef NN_NO_GRADIENT

// y = sin(x): dx = dy * cos(x).
LogicalResult SinOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = MulOp::create(
        b, getLoc(), dy,
        CosOp::create(b, getLoc(), getInput().getType(), getInput()));
  return success();
}

// y = cos(x): dx = -(dy * sin(x)).
LogicalResult CosOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value sin = SinOp::create(b, loc, getInput().getType(), getInput());
  operandGrads[0] = NegOp::create(b, loc, MulOp::create(b, loc, dy, sin));
  return success();
}

// y = clip(x, lo, hi): dx = lo < x < hi ? dy : 0.
LogicalResult ClipOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = ClipGradOp::create(b, getLoc(), dy.getType(), getInput(),
                                         dy, getMinAttr(), getMaxAttr());
  return success();
}

// y = log(x): dx = dy / x.
LogicalResult LogOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = DivOp::create(b, getLoc(), dy, getInput());
  return success();
}

// y = erf(x): dx = dy * 2 / sqrt(pi) * exp(-x^2).
LogicalResult ErfOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value x = getInput();
  Value gauss =
      ExpOp::create(b, loc, NegOp::create(b, loc, MulOp::create(b, loc, x, x)));
  Value slope =
      MulOp::create(b, loc, gauss, scalar(b, loc, dy, 2.0 / std::sqrt(M_PI)));
  operandGrads[0] = MulOp::create(b, loc, dy, slope);
  return success();
}

// y = tanh(x): dx = dy * (1 - y * y).
LogicalResult TanhOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value y = getResult();
  Value ySquared = MulOp::create(b, loc, y, y);
  Value one = scalar(b, loc, dy, 1.0);
  Value slope = SubOp::create(b, loc, one, ySquared);
  operandGrads[0] = MulOp::create(b, loc, dy, slope);
  return success();
}

// y = sigmoid(x): dx = dy * y * (1 - y).
LogicalResult SigmoidOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value y = getResult();
  Value slope = MulOp::create(
      b, loc, y, SubOp::create(b, loc, scalar(b, loc, dy, 1.0), y));
  operandGrads[0] = MulOp::create(b, loc, dy, slope);
  return success();
}

// y = max(x, 0): dx = y == 0 ? 0 : dy (the gradient at 0 is 0, as in
// PyTorch).
LogicalResult ReluOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value zero = scalar(b, loc, dy, 0.0);
  auto maskType =
      RankedTensorType::get(tensorTypeOf(dy).getShape(), b.getI1Type());
  Value off = EqualOp::create(b, loc, maskType, getResult(), zero);
  operandGrads[0] = WhereOp::create(b, loc, dy.getType(), off, zero, dy);
  return success();
}

LogicalResult GeluOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] =
        GeluGradOp::create(b, getLoc(), dy.getType(), getInput(), dy);
  return success();
}

// The same mask (same key and stream), the same scale.
LogicalResult DropoutOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = DropoutOp::create(b, getLoc(), dy.getType(), dy,
                                        getRatioAttr(), getStreamAttr());
  return success();
}

// Float to float: the gradient is cast back. From an integer or boolean
// there is nothing to differentiate; to one, no gradient arrives.
LogicalResult CastOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(getInput().getType()))
    return success();
  operandGrads[0] =
      CastOp::create(b, getLoc(), getInput().getType(), dy).getResult();
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// y = op(l) @ op(r), op transposing the last two dims where the op says:
// d op(l) = dy @ op(r)^T and d op(r) = op(l)^T @ dy, each a matmul that
// reads its operands transposed as needed (no transpose is materialized),
// summed over the batch dims its operand was broadcast along. A 2-D right
// operand (the weight of a batched activation) with an untransposed left
// one gets one flattened GEMM instead of a batched product and a reduction.
LogicalResult MatMulOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value l = getLhs(), r = getRhs();
  bool ta = getTransLhs(), tb = getTransRhs();
  if (tensorTypeOf(r).getRank() == 2 && !ta) {
    // The batch dims are l's own: dl = dy @ op(r)^T is a linear layer with
    // the weight r, transposed unless op(r) already is.
    operandGrads[0] = LinearOp::create(b, loc, l.getType(), dy, r, Value(),
                                       /*transpose_weight=*/!tb);
    // dr = flat(l)^T @ flat(dy), or its transpose flat(dy)^T @ flat(l).
    // Named first: the order of a call's arguments is unspecified, and the
    // IR must not depend on the compiler.
    Value flatDy = flattenToMatrix(b, loc, dy);
    Value flatL = flattenToMatrix(b, loc, l);
    operandGrads[1] =
        tb ? gemm(b, loc, r.getType(), flatDy, flatL, 1.0f, /*transA=*/true,
                  /*transB=*/false)
           : gemm(b, loc, r.getType(), flatL, flatDy, 1.0f, /*transA=*/true,
                  /*transB=*/false);
    return success();
  }
  // dl: dy @ op(r)^T, or for a transposed l its transpose op(r) @ dy^T.
  Value dl = ta ? MatMulOp::create(b, loc, r, dy, tb, true)
                : MatMulOp::create(b, loc, dy, r, false, !tb);
  operandGrads[0] = unbroadcast(b, loc, dl, l.getType());
  // dr: op(l)^T @ dy, or for a transposed r its transpose dy^T @ op(l).
  Value dr = tb ? MatMulOp::create(b, loc, dy, l, true, ta)
                : MatMulOp::create(b, loc, l, dy, !ta, false);
  operandGrads[1] = unbroadcast(b, loc, dr, r.getType());
  return success();
}

// y = alpha * op(a) @ op(b) + beta * c with op(m) = m^T when transposed:
//   da = alpha * dy @ op(b)^T    (or its transpose when trans_a)
//   db = alpha * op(a)^T @ dy    (or its transpose when trans_b)
//   dc = beta * dy, summed over c's broadcast dims.
// Each is one nn.gemm whose transpose flags absorb the transposes.
LogicalResult GemmOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  float alpha = getAlpha().convertToFloat();
  float beta = getBeta().convertToFloat();
  bool ta = getTransA(), tb = getTransB();
  Value a = getA(), bm = getB();
  operandGrads[0] =
      ta ? gemm(b, loc, a.getType(), bm, dy, alpha, /*transA=*/tb, true)
         : gemm(b, loc, a.getType(), dy, bm, alpha, false, /*transB=*/!tb);
  operandGrads[1] =
      tb ? gemm(b, loc, bm.getType(), dy, a, alpha, true, /*transB=*/ta)
         : gemm(b, loc, bm.getType(), a, dy, alpha, /*transA=*/!ta, false);
  if (Value c = getC()) {
    Value dc = dy;
    if (beta != 1.0f)
      dc = MulOp::create(b, loc, dy, scalar(b, loc, dy, beta));
    operandGrads[2] = unbroadcast(b, loc, dc, c.getType());
  }
  return success();
}

// y = x @ W + bias with W [in, out], or x @ W^T with W [out, in]:
//   dx    = dy @ W^T  (dy @ W for the transposed layout), a linear layer
//   dW    = flat(x)^T @ flat(dy)  (flat(dy)^T @ flat(x)), one GEMM
//   dbias = dy summed over all but the last dim.
LogicalResult LinearOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value x = getInput(), w = getWeight();
  bool transposed = getTransposeWeight();
  operandGrads[0] =
      LinearOp::create(b, loc, x.getType(), dy, w, Value(), !transposed);
  Value flatX = flattenToMatrix(b, loc, x);
  Value flatDy = flattenToMatrix(b, loc, dy);
  operandGrads[1] =
      transposed ? gemm(b, loc, w.getType(), flatDy, flatX, 1.0f, true, false)
                 : gemm(b, loc, w.getType(), flatX, flatDy, 1.0f, true, false);
  if (Value bias = getBias())
    operandGrads[2] = unbroadcast(b, loc, dy, bias.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = SoftmaxGradOp::create(b, getLoc(), getType(), getResult(),
                                            dy, getAxis());
  return success();
}

// The bias is a mask (nn-fuse-attention fuses only a bias that depends on
// no parameter): no gradient.
LogicalResult AttentionOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  auto grads = AttentionGradOp::create(
      b, getLoc(),
      TypeRange{getQuery().getType(), getKey().getType(), getValue().getType()},
      getQuery(), getKey(), getValue(), dy, getBias(), getScaleAttr());
  operandGrads[0] = grads.getQueryGrad();
  operandGrads[1] = grads.getKeyGrad();
  operandGrads[2] = grads.getValueGrad();
  return success();
}

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Type scaleType = getScale().getType();
  auto grad = LayerNormGradOp::create(
      b, getLoc(), TypeRange{getInput().getType(), scaleType, scaleType},
      getInput(), getScale(), dy, getAxis(), getEpsilon());
  operandGrads[0] = grad.getInputGrad();
  operandGrads[1] = grad.getScaleGrad();
  if (getBias())
    operandGrads[2] = grad.getBiasGrad();
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and batch normalization
//===----------------------------------------------------------------------===//

LogicalResult Conv2DOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Type weightType = getWeight().getType();
  auto biasType =
      RankedTensorType::get({tensorTypeOf(getWeight()).getShape()[0]},
                            tensorTypeOf(getWeight()).getElementType());
  auto grad = Conv2DGradOp::create(
      b, getLoc(), TypeRange{getInput().getType(), weightType, biasType},
      getInput(), getWeight(), dy, getStrides(), getPads(), getDilations(),
      getGroups());
  operandGrads[0] = grad.getInputGrad();
  operandGrads[1] = grad.getWeightGrad();
  if (getBias())
    operandGrads[2] = grad.getBiasGrad();
  return success();
}

LogicalResult MaxPool2DOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = MaxPool2DGradOp::create(
        b, getLoc(), getInput().getType(), getInput(), dy, getKernel(),
        getStrides(), getPads(), getDilations(), getCeilMode());
  return success();
}

LogicalResult AvgPool2DOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = AvgPool2DGradOp::create(
        b, getLoc(), getInput().getType(), dy, getKernel(), getStrides(),
        getPads(), getCountIncludePad(), getCeilMode());
  return success();
}

// The running statistics get the batch's sums around the running mean in
// place of a gradient: the step turns the accumulated sums into the new
// running statistics (see nn.batch_norm).
LogicalResult BatchNormOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Type c = getScale().getType();
  auto grad = BatchNormGradOp::create(
      b, getLoc(), TypeRange{getInput().getType(), c, c, c, c}, getInput(),
      getScale(), getRunningMean(), dy, getEpsilon());
  operandGrads[0] = grad.getInputGrad();
  operandGrads[1] = grad.getScaleGrad();
  operandGrads[2] = grad.getBiasGrad();
  operandGrads[3] = grad.getMeanStat();
  operandGrads[4] = grad.getVarStat();
  return success();
}

//===----------------------------------------------------------------------===//
// Indexing and shapes
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = GatherGradOp::create(b, getLoc(), getData().getType(),
                                           getIndices(), dy, getAxis());
  return success();
}

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = ReshapeOp::create(b, getLoc(), getInput().getType(), dy);
  return success();
}

LogicalResult UnsqueezeOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = ReshapeOp::create(b, getLoc(), getInput().getType(), dy);
  return success();
}

// The inverse permutation: input dim perm[i] is result dim i.
LogicalResult TransposeOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  operandGrads[0] =
      TransposeOp::create(b, getLoc(), getInput().getType(), dy, inverse);
  return success();
}

// The pieces' gradients concatenated, zeros for pieces without one.
LogicalResult SplitOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(1, Value());
  if (!isFloatTensor(getInput().getType()) ||
      llvm::none_of(resultGrads, [](Value g) { return bool(g); }))
    return success();
  Location loc = getLoc();
  SmallVector<Value> pieces;
  for (auto [result, grad] : llvm::zip(getResults(), resultGrads))
    pieces.push_back(grad ? grad : zerosOf(b, loc, result.getType()));
  operandGrads[0] =
      ConcatOp::create(b, loc, getInput().getType(), pieces, getAxis());
  return success();
}

// The gradient written into zeros of the input's shape.
LogicalResult SliceOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Type inputType = getInput().getType();
  operandGrads[0] =
      InsertSliceOp::create(b, loc, inputType, dy, zerosOf(b, loc, inputType),
                            getOffsets(), getStrides());
  return success();
}

// One nn.split of the gradient into the inputs' extents along the axis.
LogicalResult ConcatOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  if (getInputs().size() == 1) {
    operandGrads[0] = dy;
    return success();
  }
  SmallVector<int64_t> sizes;
  for (Value in : getInputs())
    sizes.push_back(tensorTypeOf(in).getShape()[getAxis()]);
  auto split = SplitOp::create(b, getLoc(), getInputs().getTypes(), dy,
                               getAxis(), sizes);
  for (auto [i, piece] : llvm::enumerate(split.getResults()))
    operandGrads[i] = piece;
  return success();
}

LogicalResult InsertSliceOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Type sourceType = getSource().getType();
  ArrayRef<int64_t> sizes = tensorTypeOf(getSource()).getShape();
  // The source's gradient is the written region, the destination's the
  // rest.
  operandGrads[0] = SliceOp::create(b, loc, sourceType, dy, getOffsets(), sizes,
                                    getStrides());
  operandGrads[1] =
      InsertSliceOp::create(b, loc, dy.getType(), zerosOf(b, loc, sourceType),
                            dy, getOffsets(), getStrides());
  return success();
}

// The gradient broadcast back over the reduced dims (an nn.add onto zeros of
// the input's shape).
LogicalResult ReduceSumOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  RankedTensorType inputType = tensorTypeOf(getInput());
  SmallVector<int64_t> kept(inputType.getShape());
  for (int64_t axis : getAxes())
    kept[axis] = 1;
  Value g = dy;
  auto keptType = RankedTensorType::get(kept, inputType.getElementType());
  if (g.getType() != keptType)
    g = ReshapeOp::create(b, loc, keptType, g);
  if (keptType != inputType)
    g = AddOp::create(b, loc, g, zerosOf(b, loc, inputType));
  operandGrads[0] = g;
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (dy)
    operandGrads[0] = CrossEntropyGradOp::create(
        b, getLoc(), getLogits().getType(), getLogits(), getLabels(), dy);
  return success();
}

// loss = mean((x - t)^2) over all N elements:
//   dx = (x - t) * (dloss * 2 / N), dt = -dx.
LogicalResult MSEOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = beginVJP(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  Location loc = getLoc();
  int64_t n = numElements(tensorTypeOf(getInput()).getShape());
  Value diff = SubOp::create(b, loc, getInput(), getTarget());
  Value factor = MulOp::create(
      b, loc, dy,
      scalar(b, loc, dy, 2.0 / static_cast<double>(std::max<int64_t>(n, 1))));
  Value dx = MulOp::create(b, loc, diff, factor);
  operandGrads[0] = dx;
  operandGrads[1] = NegOp::create(b, loc, dx);
  return success();
}
