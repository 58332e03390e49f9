//===- FuseAttention.cpp - Attention chains to nn.attention ---------------===//
//
// Implements `nn-fuse-attention`: the chain an exported attention computes,
//
//   s = matmul(q, k^T)                (k^T: trans_rhs, or any tensor of
//                                      that shape, a transpose of k say)
//   s = s * c | s / c                 (scalar constants, before the masks)
//   s = where(m, fill, s) | where(m, s, fill)   (fill <= -1e30 or -inf)
//   s = s + mask                      (a mask that depends on no parameter)
//   p = softmax(s, last axis)
//   p = where(p != p, 0, p)           (optional: exported SDPA's guard)
//   o = matmul(p, v)
//
// with a scalar scaling of q or k (q * c, as nn.MultiheadAttention and the
// exported scaled_dot_product_attention scale them) folded into the scale,
// becomes `nn.attention q, k, v[, bias] {scale}`, whose kernel never stores
// the scores. The masks become one additive bias: a `where` fill is the
// bias `where(m, fill, 0)` (s + fill is fill, or -inf, wherever a real
// score would have been overwritten), summed with the additive masks; the
// constant folder turns a bias of constants into one constant.
//
// Every intermediate value must have the chain's next op as its only user
// (the scores or probabilities read elsewhere, by a dropout say, keep the
// chain as it is), and q, k and v the same leading dims (no broadcast).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"

#include <cmath>
#include <optional>

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNFUSEATTENTIONPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe::nn;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// The value of a scalar (or splat) f32 constant.
std::optional<double> scalarConstant(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !attr.getElementType().isF32())
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// A fill that masks a score out: -inf or a float far below any score.
bool isMaskingFill(Value v) {
  std::optional<double> c = scalarConstant(v);
  return c && *c <= -1e30;
}

/// Whether `v` depends on a parameter (its gradient would matter).
class Activity {
public:
  bool dependsOnParameter(Value v) {
    auto it = known.find(v);
    if (it != known.end())
      return it->second;
    bool result = false;
    if (Operation *op = v.getDefiningOp()) {
      if (isa<ParamOp>(op))
        result = true;
      else
        for (Value operand : op->getOperands())
          if (dependsOnParameter(operand)) {
            result = true;
            break;
          }
    }
    known[v] = result;
    return result;
  }

private:
  llvm::DenseMap<Value, bool> known;
};

/// One attention chain, as matched.
struct Chain {
  Value q, k, v;
  /// The product's right operand when it is k^T as stored (not
  /// trans_rhs): k is made from it (its transpose's input, or a transpose
  /// of it) when the chain is fused.
  Value kT;
  double scale = 1.0;
  /// The additive masks, in the chain's order: a value to add as is, or a
  /// `where` fill (condition, fill, whether the fill is where the
  /// condition holds).
  struct Term {
    Value add;
    Value condition, fill;
    bool fillWhereTrue = false;
  };
  SmallVector<Term> terms;
  /// The ops the fused op replaces, from the last to the first.
  SmallVector<Operation *> ops;
};

bool hasOneUse(Value v) { return v.hasOneUse(); }

/// `x * c` or `c * x` with a scalar constant `c` and `x` used once more:
/// x and c.
std::optional<std::pair<Value, double>> scaledBy(Value v) {
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  if (std::optional<double> c = scalarConstant(mul.getRhs()))
    return std::make_pair(mul.getLhs(), *c);
  if (std::optional<double> c = scalarConstant(mul.getLhs()))
    return std::make_pair(mul.getRhs(), *c);
  return std::nullopt;
}

/// Matches the chain that ends in `product` = matmul(softmax(...), v).
std::optional<Chain> matchChain(MatMulOp product, Activity &activity) {
  if (product.getTransLhs() || product.getTransRhs())
    return std::nullopt;
  Chain chain;
  chain.v = product.getRhs();
  chain.ops = {product};
  // The exported scaled_dot_product_attention's guard between the softmax
  // and the product, where(p != p, 0, p): the kernel gives a row whose
  // keys are all masked out zeros, as the guard does.
  Value probabilities = product.getLhs();
  if (auto guard = probabilities.getDefiningOp<WhereOp>()) {
    auto isNaN = guard.getCondition().getDefiningOp<CompareOp>();
    std::optional<double> zero = scalarConstant(guard.getX());
    if (!isNaN || isNaN.getPredicate() != ComparePredicate::ne ||
        isNaN.getLhs() != guard.getY() || isNaN.getRhs() != guard.getY() ||
        !isNaN.getResult().hasOneUse() || !zero || *zero != 0.0 ||
        !hasOneUse(guard.getResult()))
      return std::nullopt;
    // The softmax feeds the guard's compare (twice) and its where only.
    probabilities = guard.getY();
    for (OpOperand &use : probabilities.getUses())
      if (use.getOwner() != guard && use.getOwner() != isNaN)
        return std::nullopt;
    chain.ops.push_back(guard);
    chain.ops.push_back(isNaN);
  } else if (!hasOneUse(probabilities)) {
    return std::nullopt;
  }
  auto softmax = probabilities.getDefiningOp<SoftmaxOp>();
  if (!softmax ||
      softmax.getAxis() != int64_t(shapeOf(softmax.getInput()).size()) - 1)
    return std::nullopt;
  chain.ops.push_back(softmax);
  Value s = softmax.getInput();
  // Walking back from the softmax: a scaling seen before a mask scales the
  // mask too (it comes after it), which the fused op does not.
  bool sawScale = false;
  while (true) {
    Operation *op = s.getDefiningOp();
    if (!op || !hasOneUse(s))
      return std::nullopt;
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      if (mm.getTransLhs())
        return std::nullopt;
      chain.q = mm.getLhs();
      (mm.getTransRhs() ? chain.k : chain.kT) = mm.getRhs();
      chain.ops.push_back(mm);
      break;
    }
    if (auto where = dyn_cast<WhereOp>(op)) {
      Chain::Term term;
      term.condition = where.getCondition();
      if (isMaskingFill(where.getX())) {
        term.fill = where.getX();
        term.fillWhereTrue = true;
        s = where.getY();
      } else if (isMaskingFill(where.getY())) {
        term.fill = where.getY();
        term.fillWhereTrue = false;
        s = where.getX();
      } else {
        return std::nullopt;
      }
      if (sawScale || activity.dependsOnParameter(term.condition))
        return std::nullopt;
      chain.terms.push_back(term);
      chain.ops.push_back(where);
      continue;
    }
    if (auto add = dyn_cast<AddOp>(op)) {
      // The scores are the operand of the result's shape that the chain's
      // ops make (read here only); the mask must depend on no parameter:
      // it gets no gradient.
      auto isScores = [&](Value x) {
        Operation *def = x.getDefiningOp();
        return def && hasOneUse(x) && shapeOf(x) == shapeOf(add.getResult()) &&
               isa<MatMulOp, MulOp, DivOp, WhereOp, AddOp>(def);
      };
      Value lhs = add.getLhs(), rhs = add.getRhs();
      bool lhsIsScores = isScores(lhs);
      if (!lhsIsScores && !isScores(rhs))
        return std::nullopt;
      Value scores = lhsIsScores ? lhs : rhs, mask = lhsIsScores ? rhs : lhs;
      if (sawScale || activity.dependsOnParameter(mask))
        return std::nullopt;
      Chain::Term term;
      term.add = mask;
      chain.terms.push_back(term);
      chain.ops.push_back(add);
      s = scores;
      continue;
    }
    if (auto div = dyn_cast<DivOp>(op)) {
      std::optional<double> c = scalarConstant(div.getRhs());
      if (!c || *c == 0.0)
        return std::nullopt;
      sawScale = true;
      chain.scale /= *c;
      chain.ops.push_back(div);
      s = div.getLhs();
      continue;
    }
    if (std::optional<std::pair<Value, double>> scaled = scaledBy(s)) {
      sawScale = true;
      chain.scale *= scaled->second;
      chain.ops.push_back(op);
      s = scaled->first;
      continue;
    }
    return std::nullopt;
  }
  // Scalar scalings of q and of k (or k^T), read by the product alone.
  for (Value *operand : {&chain.q, chain.k ? &chain.k : &chain.kT})
    while (hasOneUse(*operand))
      if (std::optional<std::pair<Value, double>> scaled = scaledBy(*operand)) {
        chain.scale *= scaled->second;
        chain.ops.push_back(operand->getDefiningOp());
        *operand = scaled->first;
      } else {
        break;
      }
  // Shapes: q [N..., T, D], k [N..., S, D], v [N..., S, E], one element
  // type, no broadcasting.
  SmallVector<int64_t> ks(shapeOf(chain.k ? chain.k : chain.kT));
  if (!chain.k && ks.size() >= 2)
    std::swap(ks[ks.size() - 1], ks[ks.size() - 2]);
  ArrayRef<int64_t> qs = shapeOf(chain.q), vs = shapeOf(chain.v);
  size_t rank = qs.size();
  if (rank < 2 || ks.size() != rank || vs.size() != rank ||
      qs.drop_back(2) != ArrayRef<int64_t>(ks).drop_back(2) ||
      qs.drop_back(2) != vs.drop_back(2) || qs.back() != ks.back() ||
      ks[rank - 2] != vs[rank - 2])
    return std::nullopt;
  for (Value x : {chain.q, chain.k ? chain.k : chain.kT, chain.v})
    if (!getElementTypeOrSelf(x.getType()).isF32())
      return std::nullopt;
  if (!std::isfinite(float(chain.scale)))
    return std::nullopt;
  return chain;
}

/// k [N..., S, D] from the product's k^T: its transpose's input transposed
/// once (the two transposes composed), or k^T transposed.
Value buildKey(OpBuilder &b, Location loc, Chain &chain) {
  Value kT = chain.kT;
  int64_t rank = shapeOf(kT).size();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);
  Value input = kT;
  if (auto t = kT.getDefiningOp<TransposeOp>(); t && hasOneUse(kT)) {
    // kT = transpose(x, p), so k = transpose(x, p . swap).
    SmallVector<int64_t> composed;
    for (int64_t i = 0; i < rank; ++i)
      composed.push_back(t.getPerm()[perm[i]]);
    perm = composed;
    input = t.getInput();
    chain.ops.push_back(t);
  }
  // k^T was k transposed: k itself.
  if (llvm::equal(perm, llvm::seq<int64_t>(0, rank)))
    return input;
  SmallVector<int64_t> shape(shapeOf(kT));
  std::swap(shape[rank - 1], shape[rank - 2]);
  auto type = RankedTensorType::get(
      shape, cast<ShapedType>(kT.getType()).getElementType());
  return TransposeOp::create(b, loc, type, input, b.getDenseI64ArrayAttr(perm));
}

/// The bias the chain's masks add up to, built before `at`; null without
/// masks.
Value buildBias(OpBuilder &b, Location loc, const Chain &chain) {
  Value bias;
  Type f32 = b.getF32Type();
  auto scalar = [&](double value) -> Value {
    auto type = RankedTensorType::get({}, f32);
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            type, ArrayRef<Attribute>{b.getF32FloatAttr(float(value))}));
  };
  // The chain's terms were collected from the softmax back: add them in
  // the forward order.
  for (const Chain::Term &term : llvm::reverse(chain.terms)) {
    Value value = term.add;
    if (!value) {
      Value zero = scalar(0.0);
      Value fill = term.fill;
      auto type = RankedTensorType::get(shapeOf(term.condition), f32);
      value = WhereOp::create(b, loc, type, term.condition,
                              term.fillWhereTrue ? fill : zero,
                              term.fillWhereTrue ? zero : fill);
    }
    bias = bias ? AddOp::create(b, loc, bias, value).getResult() : value;
  }
  return bias;
}

struct NNFuseAttentionPass
    : public mlir::gpipe::nn::impl::NNFuseAttentionPassBase<
          NNFuseAttentionPass> {
  void runOnOperation() override {
    Activity activity;
    SmallVector<MatMulOp> products;
    getOperation()->walk([&](MatMulOp mm) { products.push_back(mm); });
    for (MatMulOp product : products) {
      std::optional<Chain> chain = matchChain(product, activity);
      if (!chain)
        continue;
      OpBuilder b(product);
      Location loc = product.getLoc();
      if (!chain->k)
        chain->k = buildKey(b, loc, *chain);
      Value bias = buildBias(b, loc, *chain);
      auto fused = AttentionOp::create(b, loc, product.getType(), chain->q,
                                       chain->k, chain->v, bias,
                                       b.getF32FloatAttr(float(chain->scale)));
      product.getResult().replaceAllUsesWith(fused.getResult());
      // From the product back: each op's result is used by the one erased
      // before it only.
      for (Operation *op : chain->ops)
        op->erase();
    }
  }
};

} // namespace
