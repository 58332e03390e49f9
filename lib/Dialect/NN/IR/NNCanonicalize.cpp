//===- NNCanonicalize.cpp - Raising primitive forms to fused ops ----------===//
//
// Canonicalization patterns that raise what ONNX exporters write to the fused
// `nn` ops that map to fast kernels:
//   nn.gemm (alpha = beta = 1, no trans_a, 1-D or no addend)  -> nn.linear
//   nn.matmul with a 2-D right operand                        -> nn.linear
//   nn.add of a bias [out] and a bias-less nn.linear          -> nn.linear
//   x * (erf(x / sqrt(2)) + 1) * 0.5 (any operand order)      -> nn.gelu
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gpipe::nn;

/// True if `v` is a constant whose elements all equal `expected` to the
/// precision of the constant's float type: exporters write sqrt(2) and
/// 1/sqrt(2) rounded to f32, or to f16/bf16 for half-precision models.
static bool isSplatConstant(Value v, double expected) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return false;
  auto floatAttr = dyn_cast<FloatAttr>(attr.getSplatValue<Attribute>());
  if (!floatAttr)
    return false;
  double got = floatAttr.getValueAsDouble();
  // One unit in the last place of the type (2^-23 for f32, 2^-10 for f16,
  // 2^-7 for bf16), and never tighter than 1e-6.
  unsigned precision =
      llvm::APFloat::semanticsPrecision(floatAttr.getValue().getSemantics());
  double tolerance = std::max(1e-6, std::ldexp(1.0, 1 - int(precision)));
  return std::abs(got - expected) <=
         tolerance * std::max(1.0, std::abs(expected));
}

namespace {

/// gemm(a, b, c) with alpha = beta = 1 and a untransposed is a linear layer;
/// trans_b selects the weight layout.
struct GemmToLinear : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getTransA() || op.getAlpha().convertToFloat() != 1.0f ||
        (op.getC() && op.getBeta().convertToFloat() != 1.0f))
      return rewriter.notifyMatchFailure(op, "scaled or transposed input");
    Value bias = op.getC();
    if (bias) {
      auto biasType = cast<RankedTensorType>(bias.getType());
      int64_t out = op.getType().getShape()[1];
      if (biasType.getRank() != 1 || biasType.getDimSize(0) != out)
        return rewriter.notifyMatchFailure(op, "addend is not a [out] bias");
    }
    rewriter.replaceOpWithNewOp<LinearOp>(op, op.getType(), op.getA(),
                                          op.getB(), bias, op.getTransB());
    return success();
  }
};

/// matmul(x, op(w)) with a 2-D w is a bias-less linear layer (w read
/// transposed when op is).
struct MatMulToLinear : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    if (cast<RankedTensorType>(op.getRhs().getType()).getRank() != 2)
      return rewriter.notifyMatchFailure(op, "right operand is batched");
    if (op.getTransLhs())
      return rewriter.notifyMatchFailure(op, "left operand is transposed");
    rewriter.replaceOpWithNewOp<LinearOp>(
        op, op.getType(), op.getLhs(), op.getRhs(), Value(), op.getTransRhs());
    return success();
  }
};

/// A transpose whose last two dims are swapped, feeding a matmul, folds into
/// the matmul's operand flag: matmul(transpose(x, p)) = matmul{trans}(
/// transpose(x, p')) with p' = p with its last two entries swapped. When p'
/// is the identity, x itself is the operand (attention's backward: P^T,
/// Q^T, V^T); when p' keeps x's innermost dim innermost, the transpose left
/// copies contiguous rows instead of scattering single elements (the keys'
/// [B, T, H, D] -> [B, H, D, T] becomes [B, H, T, D], read transposed).
/// Otherwise nothing changes: swapping the flag would not make the copy
/// cheaper.
struct FoldTransposeIntoMatMul : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      Value operand = op->getOperand(i);
      auto transpose = operand.getDefiningOp<TransposeOp>();
      if (!transpose)
        continue;
      SmallVector<int64_t> perm(transpose.getPerm());
      int64_t rank = perm.size();
      if (rank < 2)
        continue;
      std::swap(perm[rank - 2], perm[rank - 1]);
      bool identity = llvm::equal(perm, llvm::seq<int64_t>(0, rank));
      // Keep the transpose unless it vanishes or stays used elsewhere.
      if (!identity && (perm[rank - 1] != rank - 1 || !transpose->hasOneUse()))
        continue;
      Value source = transpose.getInput();
      if (!identity) {
        auto type = cast<RankedTensorType>(transpose.getType());
        SmallVector<int64_t> shape(type.getShape());
        std::swap(shape[rank - 2], shape[rank - 1]);
        source = TransposeOp::create(
            rewriter, transpose.getLoc(),
            RankedTensorType::get(shape, type.getElementType()), source, perm);
      }
      bool transLhs = op.getTransLhs(), transRhs = op.getTransRhs();
      (i == 0 ? transLhs : transRhs) ^= true;
      Value lhs = i == 0 ? source : op.getLhs();
      Value rhs = i == 1 ? source : op.getRhs();
      rewriter.replaceOpWithNewOp<MatMulOp>(op, op.getType(), lhs, rhs,
                                            transLhs, transRhs);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no operand is a last-two-dims "
                                           "transpose");
  }
};

/// add(b, linear(x, w)) with b of shape [out] folds the bias into the linear.
struct AddBiasToLinear : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [mine, other] : {std::pair(op.getLhs(), op.getRhs()),
                               std::pair(op.getRhs(), op.getLhs())}) {
      auto linear = mine.getDefiningOp<LinearOp>();
      if (!linear || linear.getBias() || !linear->hasOneUse() ||
          linear.getType() != op.getType())
        continue;
      auto biasType = cast<RankedTensorType>(other.getType());
      int64_t out = linear.getType().getShape().back();
      if (biasType.getRank() != 1 || biasType.getDimSize(0) != out ||
          biasType.getElementType() != linear.getType().getElementType())
        continue;
      rewriter.replaceOpWithNewOp<LinearOp>(op, op.getType(), linear.getInput(),
                                            linear.getWeight(), other,
                                            linear.getTransposeWeight());
      rewriter.eraseOp(linear);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not a bias add on a linear");
  }
};

/// The exact GELU as torch.onnx writes it:
///   mul(mul(x, add(erf(div(x, sqrt2)), 1)), 0.5)
/// and the variants mul(mul(x, 0.5), add(...)), with every commutative
/// operand order and x * (1/sqrt2) in place of x / sqrt2.
struct RaiseGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Matches add(erf(x / sqrt2), 1) and returns x.
  static Value matchErfTerm(Value v) {
    auto add = v.getDefiningOp<AddOp>();
    if (!add)
      return {};
    for (auto [erfSide, oneSide] : {std::pair(add.getLhs(), add.getRhs()),
                                    std::pair(add.getRhs(), add.getLhs())}) {
      auto erf = erfSide.getDefiningOp<ErfOp>();
      if (!erf || !isSplatConstant(oneSide, 1.0))
        continue;
      Value scaled = erf.getInput();
      if (auto div = scaled.getDefiningOp<DivOp>();
          div && isSplatConstant(div.getRhs(), std::sqrt(2.0)))
        return div.getLhs();
      if (auto mul = scaled.getDefiningOp<MulOp>()) {
        if (isSplatConstant(mul.getRhs(), 1.0 / std::sqrt(2.0)))
          return mul.getLhs();
        if (isSplatConstant(mul.getLhs(), 1.0 / std::sqrt(2.0)))
          return mul.getRhs();
      }
    }
    return {};
  }

  /// Matches mul(x, erfTerm) in either order where erfTerm's x is `x`.
  static Value matchXTimesErfTerm(Value v) {
    auto mul = v.getDefiningOp<MulOp>();
    if (!mul)
      return {};
    for (auto [x, term] : {std::pair(mul.getLhs(), mul.getRhs()),
                           std::pair(mul.getRhs(), mul.getLhs())})
      if (Value inner = matchErfTerm(term); inner && inner == x)
        return x;
    return {};
  }

  /// Matches mul(x, 0.5) in either order and returns x.
  static Value matchHalf(Value v) {
    auto mul = v.getDefiningOp<MulOp>();
    if (!mul)
      return {};
    if (isSplatConstant(mul.getRhs(), 0.5))
      return mul.getLhs();
    if (isSplatConstant(mul.getLhs(), 0.5))
      return mul.getRhs();
    return {};
  }

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    Value x;
    for (auto [a, b] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      // (x * erfTerm) * 0.5
      if (isSplatConstant(b, 0.5))
        if (Value m = matchXTimesErfTerm(a)) {
          x = m;
          break;
        }
      // (x * 0.5) * erfTerm
      if (Value half = matchHalf(a); half && matchErfTerm(b) == half) {
        x = half;
        break;
      }
    }
    if (!x || x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "not an erf GELU");
    rewriter.replaceOpWithNewOp<GeluOp>(op, op.getType(), x);
    return success();
  }
};

} // namespace

void mlir::gpipe::nn::populateRaiseFusedOpsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<GemmToLinear, MatMulToLinear, AddBiasToLinear, RaiseGelu>(
      patterns.getContext());
}

void GemmOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<GemmToLinear>(context);
}

void MatMulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<MatMulToLinear, FoldTransposeIntoMatMul>(context);
}

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<AddBiasToLinear>(context);
}

void MulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<RaiseGelu>(context);
}
