//===- Passes.td - nn dialect passes -----------------------*- tablegen -*-===//
//
// Passes over the `nn` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_TRANSFORMS_PASSES_TD
#define GPIPE_DIALECT_NN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def NNFoldConstantsPass : Pass<"nn-fold-constants"> {
  let summary = "Evaluate the nn ops that depend on constants only";
  let description = [{
    A static-shape network computes much at compile time that an exporter
    left in the graph: causal masks from position ranges, rotary tables
    (`sin`, `cos` of positions times frequencies), masks compared against
    buffers. Every `nn` op whose operands are all `nn.constant`s (parameters
    are not constants) and that has a host evaluation is evaluated once and
    replaced by an `nn.constant` of its results; what it fed then folds in
    turn. The evaluation is HostTensor's (include/gpipe/Dialect/NN/Utils), the
    one the ONNX importer folds shape arithmetic with: plain C++ on the
    attributes, no kernel library. It covers elementwise arithmetic with
    broadcasting (`add` to `fmod`, float `pow`), comparisons and logic,
    `neg`, `sqrt`, `exp`, `log`, `sin`, `cos`, rounding, `where`, `cast`, and
    data movement (`reshape`, `unsqueeze`, `transpose`, `broadcast_to`,
    `slice`, `split`, `concat`, `gather`). Other ops (GEMMs, convolutions,
    normalizations, reductions, random ops) stay in the graph and run in the
    compiled model, as do results of more than `max-elements` elements.

    Before:
    ```mlir
    %p = nn.constant dense<[0, 1, 2]> : tensor<3xi64>
    %m = nn.compare le, %p, %q : (tensor<3xi64>, tensor<3x1xi64>) -> tensor<3x3xi1>
    ```
    After:
    ```mlir
    %m = nn.constant dense<[[true, false, false], ...]> : tensor<3x3xi1>
    ```
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"1 << 24",
           "Largest result (in elements) to fold">,
  ];
}

def NNFormLayersPass : Pass<"nn-form-layers", "::mlir::func::FuncOp"> {
  let summary = "Group a flat network into nn.layer ops at single-activation cut points";
  let description = [{
    Finds the cut points of a network: positions in the (topologically
    ordered) body where exactly one activation tensor is live. Parameters,
    constants and values computed only from them are not activations. Each
    segment between two cut points becomes an `nn.layer`, so a residual block
    (where the skip connection keeps two tensors live) stays one layer. With
    `granularity=anchor` a segment of only cheap elementwise ops (an
    activation function, a bias or position add) joins the preceding layer,
    so a Linear+ReLU chain gives one layer per pair; `granularity=scope` (the
    default) also merges consecutive layers of one name scope, so the two
    residual halves of a transformer block are one layer; with
    `granularity=op` every cut point is kept. Constants a layer uses are
    cloned into it, since layers are isolated from above. Layer names are the
    common ONNX/preset name scope of their ops (`blocks.0`), else the scope of
    their first anchor op, made unique.

    Before:
    ```mlir
    func.func @mlp(%x: tensor<8x16xf32>) -> tensor<8x32xf32> {
      %w = nn.param @"0.weight" : tensor<32x16xf32>
      %h = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32> loc("/0/Gemm")
      %r = nn.relu %h : tensor<8x32xf32> loc("/1/Relu")
      return %r : tensor<8x32xf32>
    }
    ```
    After:
    ```mlir
    func.func @mlp(%x: tensor<8x16xf32>) -> tensor<8x32xf32> {
      %0 = nn.layer "0" (%x) : (tensor<8x16xf32>) -> tensor<8x32xf32> {
      ^bb0(%a: tensor<8x16xf32>):
        %w = nn.param @"0.weight" : tensor<32x16xf32>
        %h = nn.linear %a, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
        %r = nn.relu %h : tensor<8x32xf32>
        nn.yield %r : tensor<8x32xf32>
      }
      return %0 : tensor<8x32xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
  let options = [
    Option<"granularity", "granularity", "::mlir::gpipe::nn::LayerGranularity",
           /*default=*/"::mlir::gpipe::nn::LayerGranularity::Scope",
           "`scope`: merge elementwise-only segments and consecutive segments "
           "of one name scope; `anchor`: merge elementwise-only segments "
           "into a neighbour; `op`: one layer per cut point",
           "::mlir::gpipe::nn::getLayerGranularityValues()">,
  ];
}

def NNRaiseFusedOpsPass : Pass<"nn-raise-fused-ops"> {
  let summary = "Raise primitive op patterns to nn.linear and nn.gelu";
  let description = [{
    Applies only the fusion patterns that `canonicalize` also applies:
    `nn.gemm` and `nn.matmul` with a 2-D right operand (plus a following bias
    `nn.add`) become `nn.linear`; the erf-decomposed GELU that ONNX exporters
    write, `x * (erf(x / sqrt(2)) + 1) * 0.5` in any operand order, becomes
    `nn.gelu`. Useful to see the fusions without the rest of
    canonicalization.

    Before:
    ```mlir
    %m = nn.matmul %x, %w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
    %y = nn.add %b, %m : (tensor<96xf32>, tensor<2x16x96xf32>) -> tensor<2x16x96xf32>
    ```
    After:
    ```mlir
    %y = nn.linear %x, %w, %b : (tensor<2x16x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
}

def NNFuseAttentionPass : Pass<"nn-fuse-attention"> {
  let summary = "Fuse attention chains into nn.attention";
  let description = [{
    The chain an exported attention computes, `matmul(q, k^T)`, a scaling by
    a scalar constant, masks (a `where` filling in `-inf` or a float below
    `-1e30`, an added mask that depends on no parameter), a softmax over
    the keys and `matmul(p, v)`, becomes one `nn.attention` (a scaling of q
    or k by a constant folds into its scale, the masks into one additive
    bias). The manual form, `nn.MultiheadAttention`'s and the exported
    `scaled_dot_product_attention` all take it. Its kernels keep no `T x S`
    matrix, in forward or backward. A chain whose scores or probabilities
    are read elsewhere (a dropout on them, say), whose operands broadcast,
    or whose mask depends on a parameter is left as it is.

    Before:
    ```mlir
    %s = nn.matmul %q, %k {trans_rhs = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
    %t = nn.mul %s, %c : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
    %m = nn.where %causal, %ninf, %t : (tensor<8x8xi1>, tensor<f32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    %p = nn.softmax %m {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
    %o = nn.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
    ```
    After (the bias folded to a constant by `nn-fold-constants`):
    ```mlir
    %b = nn.where %causal, %ninf, %zero : (tensor<8x8xi1>, tensor<f32>, tensor<f32>) -> tensor<8x8xf32>
    %o = nn.attention %q, %k, %v, %b {scale = 0.25 : f32} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
}

def NNFuseElementwisePass
    : Pass<"nn-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Group chains of elementwise ops into nn.fused loops";
  let description = [{
    Walks each block of the function (nested layer and remat bodies too) in
    order and grows groups of f32 elementwise ops (`nn.add`, `sub`, `mul`,
    `div`, `neg`, `reciprocal`, `sqrt`, `exp`, `erf`, `tanh`, `sigmoid`,
    `relu`, `gelu`, `gelu_grad`, `where`): an op joins the groups of its
    operands' producers (merging them when there are several) whose shape
    is its result's, in the same layer, where no op outside the group reads
    a member's result before it (the fused op takes the place of the
    group's last member, so everything it reads comes before and
    everything that reads it after). A group of two or more ops becomes one `nn.fused` whose
    results are the members' values read outside it. Inputs may broadcast
    to the shape as the ops broadcast them. The arithmetic is the ops' own,
    in their order: the gradients stay bitwise those of the unfused
    program.

    Before:
    ```mlir
    %s = nn.mul %x, %scale : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
    %m = nn.where %mask, %s, %ninf : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
    ```
    After:
    ```mlir
    %m = nn.fused (%x, %scale, %mask, %ninf) : (tensor<2x4x16x16xf32>, tensor<f32>, tensor<16x16xi1>, tensor<f32>) -> tensor<2x4x16x16xf32> {
    ^bb0(%a: tensor<2x4x16x16xf32>, %b: tensor<f32>, %c: tensor<16x16xi1>, %d: tensor<f32>):
      %s = nn.mul %a, %b : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
      %m = nn.where %c, %s, %d : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
      nn.yield %m : tensor<2x4x16x16xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
}

def NNCopyTiedParametersPass
    : Pass<"nn-copy-tied-parameters", "::mlir::ModuleOp"> {
  let summary = "Give every layer that reads a shared parameter its own copy";
  let description = [{
    A parameter read by more than one `nn.layer` of a network function (a
    language model's head reusing the token embedding) is tied: the first
    layer that reads it keeps it, and each later one reads a new copy
    `nn.parameter @"name#k" tied_to @name` (k = 1, 2, ... in layer order;
    the ops after the last layer, the loss, count as one more reader). The
    copies start equal and, because the runtime sums their gradients in copy
    order before every update, stay equal. Copying whatever the stage count
    makes each layer's contribution a gradient of its own, summed in the
    same order whether the layers share a stage or not, so training gives
    the same bits for every partition.

    Before:
    ```mlir
    nn.parameter @emb : tensor<16x8xf32> init normal(2.0e-02)
    func.func @forward(...) {
      %h = nn.layer "embed" (...) { %w = nn.param @emb ... }
      %y = nn.layer "head" (...) { %w = nn.param @emb ... }
    ```
    After:
    ```mlir
    nn.parameter @emb : tensor<16x8xf32> init normal(2.0e-02)
    nn.parameter @"emb#1" : tensor<16x8xf32> tied_to @emb
    func.func @forward(...) {
      %h = nn.layer "embed" (...) { %w = nn.param @emb ... }
      %y = nn.layer "head" (...) { %w = nn.param @"emb#1" ... }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
}

def NNPackInputsPass : Pass<"nn-pack-inputs", "::mlir::ModuleOp"> {
  let summary = "Give the network one input: its inputs packed per sample";
  let description = [{
    A pipeline feeds its first stage one tensor per micro-batch. A network
    with several inputs (`input_ids`, `attention_mask`, `token_type_ids`)
    gets one argument `[B, S]` instead: each input reshaped to `[B, n]` and
    concatenated along dim 1, sliced apart again at the entry. The module
    records the parts (`nn.input_parts`: name, type, offset in a sample's
    row) for the runtime, which packs a data file's tensors by these names.
    The inputs must share the element type and dim 0 (the batch); the error
    names those that do not. A function of one argument is left alone.

    Before:
    ```mlir
    func.func @forward(%ids: tensor<8x16xi64>, %mask: tensor<8x16xi64>) -> tensor<8x3xf32>
    ```
    After:
    ```mlir
    func.func @forward(%packed: tensor<8x32xi64>) -> tensor<8x3xf32> {
      %0 = nn.slice %packed {offsets = array<i64: 0, 0>, sizes = array<i64: 8, 16>, strides = array<i64: 1, 1>} : tensor<8x32xi64> -> tensor<8x16xi64>
      %1 = nn.slice %packed {offsets = array<i64: 0, 16>, sizes = array<i64: 8, 16>, strides = array<i64: 1, 1>} : tensor<8x32xi64> -> tensor<8x16xi64>
      ...
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "Name of the network function">,
  ];
}

def NNAttachLossPass : Pass<"nn-attach-loss", "::mlir::ModuleOp"> {
  let summary = "Append a loss to the network function";
  let description = [{
    Turns the network `func.func` named by `func` (inputs -> prediction) into
    the training objective: a `labels` argument is appended and the function
    returns the scalar loss instead of the prediction. With
    `loss=cross-entropy` (the default) the prediction is the logits, the
    labels are `i64` class ids shaped like the logits without their last
    (class) dim, and the loss is `nn.cross_entropy` (mean over the rows); with
    `loss=mse` the labels have the prediction's type and the loss is `nn.mse`.
    The loss op is located at `"/loss/CrossEntropy"` (`"/loss/MSE"`), so
    `nn-form-layers` names the layer holding it `loss`.

    It is an error, reported at the function, when the function has other
    than one result or a result the loss cannot take (not a float tensor, or
    a 0-D one for cross-entropy).

    Before:
    ```mlir
    func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x10xf32> {
      %w = nn.param @"fc.weight" : tensor<10x16xf32>
      %y = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x10xf32>
      return %y : tensor<8x10xf32>
    }
    ```
    After (`nn-attach-loss`):
    ```mlir
    func.func @forward(%x: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
      %w = nn.param @"fc.weight" : tensor<10x16xf32>
      %y = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x10xf32>
      %loss = nn.cross_entropy %y, %labels : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
      return %loss : tensor<f32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
  let options = [
    Option<"loss", "loss", "::mlir::gpipe::nn::LossKind",
           /*default=*/"::mlir::gpipe::nn::LossKind::CrossEntropy",
           "`cross-entropy` (i64 class labels) or `mse` (targets of the "
           "prediction's type)", "::mlir::gpipe::nn::getLossKindValues()">,
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "Name of the network function">,
  ];
}

def NNInferencePass : Pass<"nn-inference", "::mlir::ModuleOp"> {
  let summary = "Put the network in inference mode (no loss)";
  let description = [{
    The inference counterpart of `nn-attach-loss`: the network function
    `func` (inputs -> prediction) stays as it is, without labels or loss,
    and its ops take their inference meaning:

    - `nn.batch_norm` normalizes with its running statistics instead of the
      batch's: `y = x * a + (bias - running_mean * a)` with
      `a = scale * (1 / sqrt(running_var + epsilon))`, per channel (dim 1),
      as PyTorch's `eval()` mode computes it. The rewrite reads the same
      four parameters, so a training run's saved parameters (running
      statistics included) load by name;
    - `nn.dropout` is the identity.

    Like `nn-attach-loss`, it first refuses tensor sizes the pipeline cannot
    compile (a dimension of 0, more than 1 PiB), and it is an error when the
    function has other than one result.

    Before:
    ```mlir
    %y = nn.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<8x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4x2x2xf32>
    %z = nn.dropout %y {ratio = 1.000000e-01 : f32, stream = 7 : i64} : tensor<8x4x2x2xf32>
    ```
    After (`nn-inference`), abridged:
    ```mlir
    %e = nn.constant dense<9.99999974E-6> : tensor<f32>
    %0 = nn.add %v, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %1 = nn.sqrt %0 : tensor<4xf32>
    %2 = nn.reciprocal %1 : tensor<4xf32>
    %a = nn.mul %g, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %3 = nn.mul %m, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %c = nn.sub %b, %3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %a4 = nn.reshape %a : tensor<4xf32> -> tensor<4x1x1xf32>
    %c4 = nn.reshape %c : tensor<4xf32> -> tensor<4x1x1xf32>
    %4 = nn.mul %x, %a4 : (tensor<8x4x2x2xf32>, tensor<4x1x1xf32>) -> tensor<8x4x2x2xf32>
    %z = nn.add %4, %c4 : (tensor<8x4x2x2xf32>, tensor<4x1x1xf32>) -> tensor<8x4x2x2xf32>
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "Name of the network function">,
  ];
}

def NNDifferentiatePass : Pass<"nn-differentiate", "::mlir::ModuleOp"> {
  let summary = "Build reverse-mode gradient functions";
  let description = [{
    For each `func.func` with the unit attribute `nn.differentiate`, builds
    its backward function `<name>_bwd` right after it (see
    `buildBackwardFunction` in `Transforms.h`):

      `(inputs..., one gradient seed per float result)
         -> (gradients of the float inputs..., one gradient per parameter)`

    The body recomputes the forward (each `nn.layer` inlined), multiplies the
    seeds by `loss-scale`, and runs reverse mode through every op's
    `VJPOpInterface` in reverse op order. A value with several uses sums their
    contributions with `nn.add` in reverse op order, so gradients are
    reproducible bit for bit. Each distinct parameter gets one gradient,
    summed over all its reads; `nn.param_grads` lists the parameters in
    result order (their first-read order), `nn.input_grads` the argument
    positions of the leading results, and `nn.loss_scale` the scale when it
    is not 1. Forward ops the gradients do not need are dropped.

    The pipeline differentiates the per-micro-batch loss (a mean over the
    micro-batch) with `loss-scale` = 1/M for M micro-batches, so the
    gradients accumulated over the M micro-batches equal the gradient of the
    mean loss over the full mini-batch. Only the function that computes the
    loss takes the scale; a stage before it is seeded with the next stage's
    input gradients, which carry it already.

    With `save-activations` (remat none) the backward recomputes nothing:
    the forward is rewritten to also return, after its results, the forward
    values the VJPs read (values inside an `nn.layer` become extra layer
    results), and the backward takes them between the inputs and the seeds;
    both functions carry `nn.saved_count`.

    Before:
    ```mlir
    func.func @forward(%x: tensor<4x3xf32>) -> tensor<4x2xf32> attributes {nn.differentiate} {
      %w = nn.param @w : tensor<3x2xf32>
      %y = nn.linear %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
      %r = nn.relu %y : tensor<4x2xf32>
      return %r : tensor<4x2xf32>
    }
    ```
    After (`nn-differentiate{loss-scale=0.25}`), next to `@forward`:
    ```mlir
    func.func @forward_bwd(%x: tensor<4x3xf32>, %dr: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<3x2xf32>)
        attributes {nn.input_grads = array<i64: 0>, nn.loss_scale = 2.500000e-01 : f64, nn.param_grads = [@w]} {
      %w = nn.param @w : tensor<3x2xf32>
      %y = nn.linear %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
      %r = nn.relu %y : tensor<4x2xf32>
      %scale = nn.constant dense<2.500000e-01> : tensor<f32>
      %seed = nn.mul %dr, %scale : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
      %zero = nn.constant dense<0.000000e+00> : tensor<f32>
      %off = nn.equal %r, %zero : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xi1>
      %dy = nn.where %off, %zero, %seed : (tensor<4x2xi1>, tensor<f32>, tensor<4x2xf32>) -> tensor<4x2xf32>
      %dx = nn.linear %dy, %w {transpose_weight = true} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
      %dw = nn.gemm %x, %dy {trans_a = true} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
      return %dx, %dw : tensor<4x3xf32>, tensor<3x2xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
  let options = [
    Option<"lossScale", "loss-scale", "double", /*default=*/"1.0",
           "Multiplies the result-gradient seeds (1/M for M micro-batches of "
           "a mean loss)">,
    Option<"saveActivations", "save-activations", "bool", /*default=*/"false",
           "Keep the activations (remat none): the forward also returns the "
           "values the backward reads, which it takes instead of "
           "recomputing">,
  ];
}

def NNMicrobatchPass : Pass<"nn-microbatch", "::mlir::ModuleOp"> {
  let summary = "Rewrite the network to micro-batch shapes";
  let description = [{
    GPipe splits each mini-batch of B samples into M micro-batches and runs
    the network once per micro-batch. This pass rewrites the network function
    `func` (flat or already cut into `nn.layer` ops, with or without a loss)
    so that every tensor carrying the batch has B/M instead of B there.

    Convention: the batch is dim 0 of every function argument (inputs and
    labels alike); all arguments must agree on B and M must divide it.
    Results that carry the batch must carry it as the outermost factor of
    dim 0, so the M micro-batch results concatenate along dim 0. A scalar
    loss (`nn.cross_entropy`, `nn.mse`) becomes the mean over the
    micro-batch; the pipeline scales it by 1/M.

    A forward dataflow analysis tracks, for each tensor, which dim holds the
    batch and where in that dim: size `outer * B * inner` in row-major order,
    so a reshape may merge the batch with neighbouring dims (`[T, B*H, hd]`,
    `[T*B, E]`) as long as the batch stays whole within one dim. Elementwise
    ops broadcast (an operand without the batch, such as a parameter, must
    have size 1 or nothing there); contractions keep rows, columns and
    batch-of-matrix dims; transpose, unsqueeze, gather, split, slice and
    concat move the batch with their dims. The pass fails, before changing
    anything, at the first op that mixes samples: softmax or layer_norm over
    the batch dim, a contraction over it, a split, concat or partial slice
    along it, a reshape that cuts it across dims. A constant that has the
    batch size where the batch is (a `[B, T, T]` mask) is sliced to its first
    B/M slices when its B slices are identical, and rejected otherwise. Then
    every result type, block argument (function and `nn.layer`), function
    type and slice size along the batch is rewritten, and the function is
    verified. `microbatches=1` leaves the IR unchanged.

    Before (`microbatches=4`):
    ```mlir
    func.func @forward(%x: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
      %0 = nn.layer "0" (%x) : (tensor<8x16xf32>) -> tensor<8x10xf32> {
      ^bb0(%a: tensor<8x16xf32>):
        %w = nn.param @"0.weight" : tensor<10x16xf32>
        %h = nn.linear %a, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x10xf32>
        nn.yield %h : tensor<8x10xf32>
      }
      %l = nn.cross_entropy %0, %labels : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After:
    ```mlir
    func.func @forward(%x: tensor<2x16xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
      %0 = nn.layer "0" (%x) : (tensor<2x16xf32>) -> tensor<2x10xf32> {
      ^bb0(%a: tensor<2x16xf32>):
        %w = nn.param @"0.weight" : tensor<10x16xf32>
        %h = nn.linear %a, %w {transpose_weight = true} : (tensor<2x16xf32>, tensor<10x16xf32>) -> tensor<2x10xf32>
        nn.yield %h : tensor<2x10xf32>
      }
      %l = nn.cross_entropy %0, %labels : (tensor<2x10xf32>, tensor<2xi64>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Number of micro-batches M; must be positive and divide the "
           "batch (dim 0 of every argument)">,
    Option<"replicas", "replicas", "int64_t", /*default=*/"1",
           "Data-parallel replicas D: the batch is split into M x D "
           "micro-batches, one replica's share being M of them">,
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "Name of the network function">,
  ];
}

#endif // GPIPE_DIALECT_NN_TRANSFORMS_PASSES_TD
