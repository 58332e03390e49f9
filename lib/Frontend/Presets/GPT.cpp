//===- GPT.cpp - The built-in decoder-only Transformer ----------*- C++ -*-===//
//
// Builds the `gpt` preset: a char-level, pre-LayerNorm decoder-only
// Transformer in the `nn` dialect's fused form, laid out like the PyTorch
// module
//
//   tok_emb (Embedding [vocab, d]), pos_emb ([seq, d]),
//   blocks.{i}: ln1, attn.qkv ([3d, d]), attn.proj, ln2, mlp.fc ([4d, d]),
//               mlp.proj ([d, 4d]),
//   ln_f, head ([vocab, d], no bias; with tieEmbeddings the head reads
//   tok_emb.weight itself, as GPT-2 does)
//
// Attention is written out in primitive ops (split, per-head reshape and
// transpose, q.k^T / sqrt(hd), a causal nn.where with -inf, softmax, times v)
// so every later pass sees the same ops an ONNX import of that module gives.
//
//===----------------------------------------------------------------------===//

#include "PresetBuilder.h"

#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::presets;

namespace {
/// The sizes of one GPT.
struct Dims {
  int64_t batch, seq, width, heads, headDim, vocab;
};
} // namespace

/// GPT-2's init: N(0, 0.02) weights and embeddings, zero biases.
static InitRule weightInit() { return InitRule::normal(0.02); }

/// Splits the heads off `v` ([B, T, d] -> [B, T, H, hd]) and permutes the
/// result with `perm`.
static Value splitHeads(PresetBuilder &pb, StringRef scope, Value v,
                        const Dims &d, ArrayRef<int64_t> perm) {
  OpBuilder &b = pb.builder();
  MLIRContext *ctx = pb.getContext();
  SmallVector<int64_t> shape = {d.batch, d.seq, d.heads, d.headDim};
  Value r = nn::ReshapeOp::create(b, pb.loc(scope, "Reshape"),
                                  Type(f32Tensor(ctx, shape)), v);
  SmallVector<int64_t> permuted;
  for (int64_t p : perm)
    permuted.push_back(shape[p]);
  return nn::TransposeOp::create(b, pb.loc(scope, "Transpose"),
                                 Type(f32Tensor(ctx, permuted)), r, perm);
}

/// Causal self-attention of module `scope` on `h` ([B, T, d]).
static Value buildAttention(PresetBuilder &pb, StringRef scope, Value h,
                            const Dims &d) {
  OpBuilder &b = pb.builder();
  MLIRContext *ctx = pb.getContext();
  Type btd = f32Tensor(ctx, {d.batch, d.seq, d.width});

  Value qkv = pb.linear(joinScope(scope, "qkv"), h, 3 * d.width, weightInit(),
                        InitRule::zeros());
  SmallVector<Type> thirds(3, btd);
  auto split = nn::SplitOp::create(b, pb.loc(scope, "Split"), thirds, qkv,
                                   /*axis=*/2, {d.width, d.width, d.width});
  Value q = splitHeads(pb, scope, split.getResult(0), d, {0, 2, 1, 3});
  Value k = splitHeads(pb, scope, split.getResult(1), d, {0, 2, 3, 1});
  Value v = splitHeads(pb, scope, split.getResult(2), d, {0, 2, 1, 3});

  // scores = q . k^T / sqrt(hd): [B, H, T, T].
  Value scores = nn::MatMulOp::create(b, pb.loc(scope, "MatMul"), q, k);
  Value scale =
      pb.scalar(scope, 1.0 / std::sqrt(static_cast<double>(d.headDim)));
  scores = nn::MulOp::create(b, pb.loc(scope, "Mul"), scores, scale);

  // Token t attends to tokens <= t: the mask is true above the diagonal.
  SmallVector<bool> future(d.seq * d.seq, false);
  for (int64_t i = 0; i < d.seq; ++i)
    for (int64_t j = i + 1; j < d.seq; ++j)
      future[i * d.seq + j] = true;
  auto maskType =
      RankedTensorType::get({d.seq, d.seq}, IntegerType::get(ctx, 1));
  Value mask = nn::ConstantOp::create(
      b, pb.loc(scope, "Constant"),
      cast<ElementsAttr>(DenseElementsAttr::get(maskType, future)));
  Value ninf = pb.scalar(scope, -std::numeric_limits<double>::infinity());
  scores = nn::WhereOp::create(b, pb.loc(scope, "Where"), scores.getType(),
                               mask, ninf, scores);
  Value probs = nn::SoftmaxOp::create(b, pb.loc(scope, "Softmax"),
                                      scores.getType(), scores, /*axis=*/3);

  // Merge the heads back: [B, H, T, hd] -> [B, T, H, hd] -> [B, T, d].
  Value out = nn::MatMulOp::create(b, pb.loc(scope, "MatMul"), probs, v);
  out = nn::TransposeOp::create(
      b, pb.loc(scope, "Transpose"),
      Type(f32Tensor(ctx, {d.batch, d.seq, d.heads, d.headDim})), out,
      ArrayRef<int64_t>{0, 2, 1, 3});
  out = nn::ReshapeOp::create(b, pb.loc(scope, "Reshape"), btd, out);
  return pb.linear(joinScope(scope, "proj"), out, d.width, weightInit(),
                   InitRule::zeros());
}

/// One pre-LayerNorm block: x + attn(ln1(x)), then + mlp(ln2(.)).
static Value buildBlock(PresetBuilder &pb, StringRef scope, Value x,
                        const Dims &d) {
  OpBuilder &b = pb.builder();
  Value h = pb.layerNorm(joinScope(scope, "ln1"), x);
  h = buildAttention(pb, joinScope(scope, "attn"), h, d);
  x = nn::AddOp::create(b, pb.loc(scope, "Add"), x, h);

  std::string mlp = joinScope(scope, "mlp");
  h = pb.layerNorm(joinScope(scope, "ln2"), x);
  h = pb.linear(joinScope(mlp, "fc"), h, 4 * d.width, weightInit(),
                InitRule::zeros());
  h = nn::GeluOp::create(b, pb.loc(joinScope(mlp, "act"), "Gelu"), h);
  h = pb.linear(joinScope(mlp, "proj"), h, d.width, weightInit(),
                InitRule::zeros());
  return nn::AddOp::create(b, pb.loc(scope, "Add"), x, h);
}

OwningOpRef<ModuleOp> presets::buildGPT(MLIRContext *context,
                                        const PresetOptions &options) {
  Dims d{options.batch,
         options.seqLen,
         options.width,
         options.heads,
         options.width / options.heads,
         options.vocab};
  auto tokens =
      RankedTensorType::get({d.batch, d.seq}, IntegerType::get(context, 64));
  PresetBuilder pb(context, "gpt", tokens,
                   f32Tensor(context, {d.batch, d.seq, d.vocab}));
  OpBuilder &b = pb.builder();

  Value table =
      pb.parameter("tok_emb.weight", {d.vocab, d.width}, weightInit());
  Value x = nn::GatherOp::create(
      b, pb.loc("tok_emb", "Gather"),
      Type(f32Tensor(context, {d.batch, d.seq, d.width})), table, pb.input(),
      /*axis=*/uint64_t(0));
  Value pos = pb.parameter("pos_emb", {d.seq, d.width}, weightInit());
  x = nn::AddOp::create(b, pb.loc("", "Add"), x, pos);

  for (int64_t i = 0; i < options.depth; ++i)
    x = buildBlock(pb, "blocks." + std::to_string(i), x, d);

  x = pb.layerNorm("ln_f", x);
  // Tied: the head's [vocab, d] weight is the token embedding (GPT-2).
  Value logits =
      options.tieEmbeddings
          ? Value(nn::LinearOp::create(
                b, pb.loc("head", "Linear"),
                Type(f32Tensor(context, {d.batch, d.seq, d.vocab})), x, table,
                /*bias=*/Value(), /*transpose_weight=*/true))
          : pb.linear("head", x, d.vocab, weightInit(), std::nullopt);
  return pb.finish(logits);
}
