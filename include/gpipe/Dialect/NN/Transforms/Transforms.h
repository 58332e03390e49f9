//===- Transforms.h - nn rewrite entry points -------------------*- C++ -*-===//
//
// Public pattern sets and transformations of the `nn` dialect that passes
// (and the compile driver) reuse.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_TRANSFORMS_TRANSFORMS_H
#define GPIPE_DIALECT_NN_TRANSFORMS_TRANSFORMS_H

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Runtime/Vocabulary.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace mlir::gpipe::nn {

/// How finely `formLayers` cuts.
enum class LayerGranularity {
  /// `Anchor`, then consecutive layers of one name scope merge (a
  /// transformer block with two residual halves is one layer).
  Scope,
  /// Segments without an anchor op merge into the preceding layer.
  Anchor,
  /// Every cut point starts a layer.
  Op,
};

/// Groups the body of `func` into nn.layer ops at single-activation cut
/// points. Returns the number of layers formed; a function that already has
/// layers is left alone and reports 0.
FailureOr<unsigned> formLayers(func::FuncOp func, LayerGranularity granularity);

/// Prints a table of the nn.layer ops of `func`: name, op count, forward
/// FLOPs, parameter count and output type.
void printLayerSummary(func::FuncOp func, llvm::raw_ostream &os);

//===----------------------------------------------------------------------===//
// Training objective and autodiff
//===----------------------------------------------------------------------===//

/// The loss `attachLoss` appends: the vocabulary's, named in
/// gpipe/Runtime/Losses.def. CrossEntropy: `nn.cross_entropy` over the last
/// (class) dim with i64 labels; MSE: `nn.mse` against a target of the
/// prediction's type.
using LossKind = ::gpipe::abi::LossKind;
using ::gpipe::abi::getLossName;

/// Turns the network `func` (inputs -> one prediction) into the training
/// objective: appends a `labels` argument (i64 of the logits' shape without
/// the class dim for cross-entropy, the prediction's type for MSE) and
/// returns the scalar loss instead of the prediction. The loss op is located
/// at `NameLoc("/loss/CrossEntropy")` (`"/loss/MSE"`). Fails with an error at
/// `func` when it has no body, not exactly one result, or a result the loss
/// cannot take.
LogicalResult attachLoss(func::FuncOp func, LossKind kind);

/// Tensors that share their element type and their dim 0 (the batch, B) as
/// one tensor `[B, S]`: each reshaped to `[B, n]` (n its elements per
/// sample), concatenated along dim 1 in order. A single value of shape
/// `[B, n]` is returned as is.
Value packRows(OpBuilder &builder, Location loc, ValueRange values);
/// The inverse of packRows: `types[j]` sliced out of `packed` and reshaped.
SmallVector<Value> unpackRows(OpBuilder &builder, Location loc, Value packed,
                              TypeRange types);
/// Whether `types` can be packed by packRows: ranked tensors of rank >= 1
/// with one element type and one dim 0.
bool canPackRows(TypeRange types);

/// The module attribute recording how `nn-pack-inputs` packed the network's
/// inputs: an array of {name, type, offset} dictionaries, one per input in
/// order (offset: its first element within a sample's packed row).
inline constexpr llvm::StringLiteral kInputPartsAttrName =
    NNDialect::kInputPartsAttrName;

/// Gives `func` one argument: its arguments packed per sample (packRows),
/// unpacked at the entry, and records the parts on `module`. A function of
/// one argument is left alone. Reports the arguments that cannot share one
/// packed tensor.
LogicalResult packInputs(ModuleOp module, func::FuncOp func);

/// Refuses, at the op or argument that has it, a tensor the pipeline cannot
/// compile: a dimension of size 0, or more than 1 PiB (a byte size that
/// overflows included). `nn-attach-loss` (training) and `nn-inference` run
/// it first.
LogicalResult checkTensorSizes(func::FuncOp func);

/// Puts the network `func` (inputs -> prediction, no loss) in inference
/// mode: every `nn.batch_norm` normalizes with its running statistics
/// (`(x - running_mean) * (scale / sqrt(running_var + epsilon)) + bias`,
/// per channel, composed of elementwise ops that read the same parameters),
/// and every `nn.dropout` is the identity. Fails with an error at `func`
/// when it has no body or not exactly one result.
LogicalResult prepareForInference(func::FuncOp func);

/// Attribute names of the autodiff contract.
/// Unit attribute on a forward function: `nn-differentiate` builds its
/// backward function `<name>_bwd`.
inline constexpr llvm::StringLiteral kDifferentiateAttrName =
    NNDialect::kDifferentiateAttrName;
/// On a backward function: the parameters whose gradients are its trailing
/// results, in result order (an array of flat symbol references).
inline constexpr llvm::StringLiteral kParamGradsAttrName =
    NNDialect::kParamGradsAttrName;
/// On a backward function: the positions of the forward arguments whose
/// gradients are its leading results, in result order (`array<i64>`).
inline constexpr llvm::StringLiteral kInputGradsAttrName =
    NNDialect::kInputGradsAttrName;
/// On a backward function built with a loss scale other than 1: the scale
/// (f64), for the reader.
inline constexpr llvm::StringLiteral kLossScaleAttrName =
    NNDialect::kLossScaleAttrName;

/// On a forward function and its backward built with `saveActivations`: the
/// number N of saved forward values, the forward's last N results and the
/// backward's N arguments after the forward's arguments (`i64`).
inline constexpr llvm::StringLiteral kSavedCountAttrName =
    NNDialect::kSavedCountAttrName;

/// On the two halves of a split backward (`splitBackwardFunction`): the
/// number N of values the input half hands to the weight half, the input
/// half's last N results and the weight half's last N arguments (`i64`).
inline constexpr llvm::StringLiteral kDeferredCountAttrName =
    NNDialect::kDeferredCountAttrName;

/// Options of `buildBackwardFunction`.
struct BackwardOptions {
  /// Multiplies every result-gradient seed before reverse mode. The training
  /// pipeline differentiates the per-micro-batch loss (a mean over the
  /// micro-batch) with `lossScale = 1/M` for M micro-batches, so that the
  /// gradients accumulated over the M micro-batches equal the gradient of the
  /// mean loss over the whole mini-batch. Only the function that computes the
  /// loss (the last stage) is built with the scale: the seeds of the earlier
  /// stages are the input gradients of the next stage, already scaled.
  double lossScale = 1.0;
  /// Keep the activations instead of recomputing them (remat `none`): the
  /// forward is rewritten to also return, after its results, the forward
  /// values the backward reads, and the backward takes them as arguments.
  bool saveActivations = false;
  /// With `saveActivations`, the top-level layers (by name) whose values
  /// are recomputed instead of kept (remat `selective`): only the other
  /// layers' values (and those of no layer) are saved; the backward reruns
  /// these layers' ops from the saved values (NNLayerLoc.h tells the ops
  /// apart).
  llvm::SmallVector<StringAttr> recomputeLayers;
  /// When set (and nothing is saved, or some layers are recomputed),
  /// receives the ops of the backward that recompute the forward, in order:
  /// what is left of the forward's clone once dead ops are removed. The
  /// pipeline wraps them in its re-materialization region.
  llvm::SmallVectorImpl<Operation *> *recomputed = nullptr;
};

/// Builds the reverse-mode gradient function of `forward`, inserted right
/// after it under the symbol `name`:
///
///   forward: (x_0, ..., x_n) -> (y_0, ..., y_m)
///   name:    (x_0, ..., x_n, dy_i for each float result y_i)
///              -> (dx_j for each float argument x_j, dp for each parameter)
///
/// The body recomputes the forward (a clone, with every `nn.layer` inlined so
/// reverse mode sees one flat body), multiplies each seed `dy_i` by
/// `options.lossScale`, then runs reverse mode through the ops'
/// `VJPOpInterface` in reverse op order. A value used several times gets the
/// sum of its uses' contributions, added with `nn.add` in reverse op order,
/// so the gradients are reproducible bit for bit. Every distinct parameter
/// read (`nn.param`) gets one gradient, summed over all its reads; the
/// parameters are listed in `nn.param_grads` in the order of their first
/// read, and `nn.input_grads` lists the argument positions of the leading
/// results. An argument or parameter no gradient reaches gets zeros. Forward
/// ops the gradients do not need are removed.
///
/// Fails with an error (and leaves the module unchanged) when `forward` has
/// no single-block body, `name` is taken, or an op on the gradient path has
/// no VJP.
///
/// With `options.saveActivations` nothing is recomputed: the forward values
/// the reverse pass reads (op results other than parameter reads and
/// constants, in forward op order; values inside `nn.layer` ops are threaded
/// out as extra layer results) are appended to the forward's results, and
/// the backward takes them between the forward's arguments and the seeds:
///
///   forward: (x_0, ..., x_n) -> (y_0, ..., y_m, s_0, ..., s_k)
///   name:    (x_0, ..., x_n, s_0, ..., s_k, dy_i ...) -> (as above)
///
/// Both functions carry `nn.saved_count = k+1`.
FailureOr<func::FuncOp>
buildBackwardFunction(func::FuncOp forward, llvm::StringRef name,
                      const BackwardOptions &options = {});

/// The two halves of a split backward.
struct SplitBackward {
  func::FuncOp input;
  func::FuncOp weight;
};

/// Splits `backward` (the contract of `buildBackwardFunction`: arguments
/// A..., results the input gradients then one gradient per
/// `nn.param_grads` entry) into the zero-bubble halves of Qi et al. 2023,
/// inserted after it under `inputName` and `weightName`:
///
///   inputName:  (A...) -> (input gradients..., d_0, ..., d_{n-1})
///   weightName: (A..., d_0, ..., d_{n-1}) -> (parameter gradients...)
///
/// The input half holds the ops the input gradients need (a recompute
/// region among them when they need it); the weight half the ops only the
/// parameter gradients need. The d_i are the input half's values the weight
/// half reads (in definition order; parameter reads and constants are read
/// again instead): every op of `backward` runs once over the two halves, so
/// their gradients are bit for bit those of `backward`. Both carry
/// `nn.deferred_count = n` and the backward's `nn.saved_count` and
/// `nn.loss_scale`; the input half its `nn.input_grads`, the weight half its
/// `nn.param_grads` and an empty `nn.input_grads`. `backward` is kept.
///
/// Fails with an error at `backward` when it has no single-block body,
/// lacks `nn.param_grads`, or a name is taken.
FailureOr<SplitBackward> splitBackwardFunction(func::FuncOp backward,
                                               llvm::StringRef inputName,
                                               llvm::StringRef weightName);

//===----------------------------------------------------------------------===//
// Micro-batching
//===----------------------------------------------------------------------===//

/// Rewrites `func` (flat or cut into nn.layer ops, with or without a loss)
/// to run on one of `m` micro-batches: the batch, dim 0 of every argument,
/// shrinks from B to B/m in every tensor that carries it. Fails with a
/// located error, before changing anything, when m < 1, m does not divide B,
/// the arguments disagree on B, or an op mixes samples; m = 1 is the
/// identity.
/// With `replicas` D > 1 the batch is split into m x D micro-batches (one
/// data-parallel replica's share is m of them).
LogicalResult microbatchFunction(func::FuncOp func, int64_t m,
                                 int64_t replicas = 1);

} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_TRANSFORMS_TRANSFORMS_H
