//===- Passes.td - nn dialect passes -----------------------*- tablegen -*-===//
//
// Passes over the `nn` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_TRANSFORMS_PASSES_TD
#define GPIPE_DIALECT_NN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    Option<"granularity", "granularity", "std::string", /*default=*/"\"scope\"",
           "`scope`: merge elementwise-only segments and consecutive segments "
           "of one name scope; `anchor`: merge elementwise-only segments "
           "into a neighbour; `op`: one layer per cut point">,
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

def NNAttachLossPass : Pass<"nn-attach-loss", "::mlir::ModuleOp"> {
  let summary = "Append a loss to the network function";
  let description = [{
    Turns the network `func.func` (inputs -> prediction) into the training
    objective: a labels argument is appended and the function returns the
    scalar loss (`nn.cross_entropy` with integer labels, or `nn.mse`).
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"cross-entropy\"",
           "`cross-entropy` or `mse`">,
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "Name of the network function">,
  ];
}

def NNDifferentiatePass : Pass<"nn-differentiate", "::mlir::ModuleOp"> {
  let summary = "Build reverse-mode gradient functions";
  let description = [{
    For each function marked `nn.differentiate`, builds its backward
    function through the ops' `VJPOpInterface`.
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
}

def NNMicrobatchPass : Pass<"nn-microbatch", "::mlir::ModuleOp"> {
  let summary = "Rewrite the network to micro-batch shapes";
  let description = [{
    Divides the batch dimension of the network function by `microbatches`.
  }];
  let dependentDialects = ["::mlir::gpipe::nn::NNDialect"];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Number of micro-batches M (must divide the batch)">,
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "Name of the network function">,
  ];
}

#endif // GPIPE_DIALECT_NN_TRANSFORMS_PASSES_TD
