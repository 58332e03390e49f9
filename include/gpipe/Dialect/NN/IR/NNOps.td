//===- NNOps.td - nn dialect ops ---------------------------*- tablegen -*-===//
//
// The ops of the `nn` dialect: parameters and constants, numpy-broadcasting
// elementwise math, contractions, normalization, shape manipulation, losses,
// the fused forms canonicalization raises to, `nn.layer`, the unit the
// pipeline partitioner cuts at, and the few ops reverse-mode autodiff emits
// (`nn.reduce_sum`, `nn.insert_slice` and the fused `*_grad` kernels).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_IR_NNOPS_TD
#define GPIPE_DIALECT_NN_IR_NNOPS_TD

include "gpipe/Dialect/NN/IR/NNBase.td"
include "gpipe/Dialect/NN/IR/NNInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// Ops that anchor a layer: a segment between two cut points that holds none of
// these (only cheap elementwise work) is merged into its neighbour.
def NN_LayerAnchor : NativeOpTrait<"LayerAnchor"> {
  let cppNamespace = "::mlir::gpipe::nn::OpTrait";
}

def NN_Cost : DeclareOpInterfaceMethods<NN_CostOpInterface, ["getCost"]>;

// Differentiable ops: every forward op. The `*_grad` ops autodiff emits do
// not carry it (no second-order differentiation).
def NN_VJP : DeclareOpInterfaceMethods<NN_VJPOpInterface, ["buildVJP"]>;

class NN_PureOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat([Pure, NN_Cost], traits)> {
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def NN_InitZeros : I32EnumAttrCase<"Zeros", 0, "zeros">;
def NN_InitOnes : I32EnumAttrCase<"Ones", 1, "ones">;
def NN_InitNormal : I32EnumAttrCase<"Normal", 2, "normal">;
def NN_InitUniform : I32EnumAttrCase<"Uniform", 3, "uniform">;

def NN_InitKind : I32EnumAttr<"InitKind",
    "how a parameter's initial value is drawn at run time",
    [NN_InitZeros, NN_InitOnes, NN_InitNormal, NN_InitUniform]> {
  let cppNamespace = "::mlir::gpipe::nn";
}

def NN_ParameterOp : NN_Op<"parameter", [Symbol, NN_Cost,
    HasParent<"::mlir::ModuleOp">]> {
  let summary = "A named trainable parameter";
  let description = [{
    Declares a trainable tensor at module level. The symbol name is the
    parameter's name in the frontend (an ONNX initializer name or a preset's
    dotted name) and stays the same through every pass, so weights, gradients
    and checkpoints do not depend on the partition. The initial value is either
    explicit (`initial_value`, usually a `dense_resource` so large tensors stay
    out of the text) or drawn at run time from the typed rule `init`
    (`zeros`, `ones`, `normal` with standard deviation `init_scale`,
    `uniform` on [-init_scale, init_scale]), written `init normal(0.02)`.

    A tied parameter (one weight read by several layers, such as a language
    model's head reusing the token embedding) has one copy per layer that
    reads it (nn-copy-tied-parameters): every copy after the first is
    `tied_to` the first, has no initial value of its own (it starts as the
    first does) and keeps the first's name in checkpoints; the copies'
    gradients are summed in copy order before every update, so the copies
    stay identical wherever the partition puts them.

    ```mlir
    nn.parameter @"0.weight" : tensor<32x16xf32> = dense_resource<w0> : tensor<32x16xf32>
    nn.parameter @"ln.weight" : tensor<32xf32> init ones
    nn.parameter @"fc.weight" : tensor<32x32xf32> init normal(2.0e-02)
    nn.parameter @"emb.weight#1" : tensor<64x32xf32> tied_to @"emb.weight"
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<NN_Tensor>:$type,
                       OptionalAttr<ElementsAttr>:$initial_value,
                       OptionalAttr<NN_InitKind>:$init,
                       OptionalAttr<F64Attr>:$init_scale,
                       OptionalAttr<FlatSymbolRefAttr>:$tied_to);
  let assemblyFormat = [{
    $sym_name `:` $type (`=` $initial_value^)? (`tied_to` $tied_to^)?
    custom<InitRule>($init, $init_scale) attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def NN_ParamOp : NN_PureOp<"param", [NN_VJP,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reads a parameter";
  let description = [{
    The current value of the module-level `nn.parameter` named by `name`.

    ```mlir
    %w = nn.param @"0.weight" : tensor<32x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def NN_ConstantOp : NN_PureOp<"constant", [ConstantLike, NN_VJP,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor";
  let description = [{
    ```mlir
    %c = nn.constant dense<5.000000e-01> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let builders = [
    OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
      build($_builder, $_state, value.getType(), value);
    }]>,
  ];
}

//===----------------------------------------------------------------------===//
// Elementwise ops with numpy broadcasting
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, list<Trait> traits = []>
    : NN_PureOp<mnemonic, !listconcat([NN_VJP], traits)> {
  let arguments = (ins NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs), [{
      build($_builder, $_state,
            ::mlir::gpipe::nn::inferBroadcastType($_state.location, lhs, rhs),
            lhs, rhs);
    }]>,
  ];
  let description = [{
    Elementwise `}] # mnemonic # [{` of two tensors of the same element type
    with numpy (ONNX multidirectional) broadcasting.

    ```mlir
    %r = nn.}] # mnemonic # [{ %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
}

def NN_AddOp : NN_BinaryOp<"add", [Commutative]> {
  let summary = "Elementwise addition";
  let hasCanonicalizer = 1;
}
def NN_SubOp : NN_BinaryOp<"sub"> { let summary = "Elementwise subtraction"; }
def NN_MulOp : NN_BinaryOp<"mul", [Commutative]> {
  let summary = "Elementwise multiplication";
  let hasCanonicalizer = 1;
}
def NN_DivOp : NN_BinaryOp<"div"> { let summary = "Elementwise division"; }
def NN_PowOp : NN_BinaryOp<"pow"> { let summary = "Elementwise power"; }
def NN_MaxOp : NN_BinaryOp<"max", [Commutative]> {
  let summary = "Elementwise maximum (NaN propagates; ties share the gradient)";
}
def NN_MinOp : NN_BinaryOp<"min", [Commutative]> {
  let summary = "Elementwise minimum (NaN propagates; ties share the gradient)";
}
def NN_RemainderOp : NN_BinaryOp<"remainder"> {
  let summary = "Elementwise remainder with the divisor's sign";
  let description = [{
    `lhs - rhs * floor(lhs / rhs)`, the remainder that takes the divisor's
    sign (Python's `%`, `torch.remainder`, ONNX `Mod` with `fmod = 0`), of
    two f32 or i64 tensors with numpy broadcasting. An integer division by
    zero is a runtime error.

    ```mlir
    %r = nn.remainder %a, %b : (tensor<4x8xi64>, tensor<i64>) -> tensor<4x8xi64>
    ```
  }];
}
def NN_FModOp : NN_BinaryOp<"fmod"> {
  let summary = "Elementwise remainder with the dividend's sign";
  let description = [{
    `lhs - rhs * trunc(lhs / rhs)`, the remainder that takes the dividend's
    sign (C's `fmod`, `torch.fmod`, ONNX `Mod` with `fmod = 1`), of two f32
    or i64 tensors with numpy broadcasting.

    ```mlir
    %r = nn.fmod %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
}

def NN_EqualOp : NN_PureOp<"equal", [Commutative, NN_VJP]> {
  let summary = "Elementwise equality";
  let description = [{
    Compares two tensors of the same element type elementwise with
    broadcasting; the result is `i1`.

    ```mlir
    %m = nn.equal %a, %b : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
    ```
  }];
  let arguments = (ins NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def NN_CmpEq : I32EnumAttrCase<"eq", 0>;
def NN_CmpNe : I32EnumAttrCase<"ne", 1>;
def NN_CmpLt : I32EnumAttrCase<"lt", 2>;
def NN_CmpLe : I32EnumAttrCase<"le", 3>;
def NN_CmpGt : I32EnumAttrCase<"gt", 4>;
def NN_CmpGe : I32EnumAttrCase<"ge", 5>;
def NN_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "the relation nn.compare tests",
    [NN_CmpEq, NN_CmpNe, NN_CmpLt, NN_CmpLe, NN_CmpGt, NN_CmpGe]> {
  let cppNamespace = "::mlir::gpipe::nn";
}

def NN_CompareOp : NN_PureOp<"compare", [NN_VJP]> {
  let summary = "Elementwise comparison";
  let description = [{
    `lhs <predicate> rhs` elementwise with broadcasting, for two tensors of
    the same element type (ONNX Less, LessOrEqual, Greater, GreaterOrEqual;
    `ne` for Not(Equal)); the result is `i1`. A NaN compares false except
    under `ne`. No gradient flows through it.

    ```mlir
    %m = nn.compare le, %pos, %limit : (tensor<16x16xi64>, tensor<16x1xi64>) -> tensor<16x16xi1>
    ```
  }];
  let arguments = (ins NN_ComparePredicate:$predicate, NN_Tensor:$lhs,
                       NN_Tensor:$rhs);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def NN_LogicalAnd : I32EnumAttrCase<"and_", 0, "and">;
def NN_LogicalOr : I32EnumAttrCase<"or_", 1, "or">;
def NN_LogicalXor : I32EnumAttrCase<"xor_", 2, "xor">;
def NN_LogicalKind : I32EnumAttr<"LogicalKind",
    "the connective nn.logical applies",
    [NN_LogicalAnd, NN_LogicalOr, NN_LogicalXor]> {
  let cppNamespace = "::mlir::gpipe::nn";
}

def NN_LogicalOp : NN_PureOp<"logical", [NN_VJP]> {
  let summary = "Elementwise and, or, xor of booleans";
  let description = [{
    ONNX And, Or and Xor on `i1` tensors with broadcasting.

    ```mlir
    %m = nn.logical and, %a, %b : (tensor<8x16xi1>, tensor<16xi1>) -> tensor<8x16xi1>
    ```
  }];
  let arguments = (ins NN_LogicalKind:$kind, NN_BoolTensor:$lhs,
                       NN_BoolTensor:$rhs);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = [{
    $kind `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def NN_CumSumOp : NN_PureOp<"cumsum", [NN_VJP]> {
  let summary = "Cumulative sum along an axis (ONNX CumSum)";
  let description = [{
    `out[..., i, ...]` is the sum of the input over `j <= i` along `axis`
    (`j < i` if `exclusive`; from the end if `reverse`), added in order. On
    f32 and i64 tensors (position ids counted from an attention mask). The
    gradient is the reverse cumulative sum of the result's gradient.

    ```mlir
    %p = nn.cumsum %m {axis = 1 : i64, exclusive = false, reverse = false} : tensor<8x16xi64> -> tensor<8x16xi64>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, I64Attr:$axis, BoolAttr:$exclusive,
                       BoolAttr:$reverse);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_BroadcastToOp : NN_PureOp<"broadcast_to", [NN_VJP]> {
  let summary = "Numpy broadcast to the result's shape (ONNX Expand)";
  let description = [{
    Repeats the input along the result's dims where the input has size 1 or
    lacks the dim (dims aligned from the right, as numpy does). Its gradient
    sums the result's gradient over the repeated dims. Grouped-query
    attention repeats its key and value heads with it; a class token shared
    by every sample is broadcast to the batch with it.

    ```mlir
    %r = nn.broadcast_to %t : tensor<1x1x64xf32> -> tensor<8x1x64xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def NN_WhereOp : NN_PureOp<"where", [NN_VJP]> {
  let summary = "Elementwise select";
  let description = [{
    `cond ? x : y` elementwise, all three broadcast together.

    ```mlir
    %r = nn.where %m, %x, %ninf : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
    ```
  }];
  let arguments = (ins NN_BoolTensor:$condition, NN_Tensor:$x, NN_Tensor:$y);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $x `,` $y attr-dict `:` functional-type(operands, results)
  }];
}

class NN_UnaryOp<string mnemonic, Type operandType, list<Trait> traits = []>
    : NN_PureOp<mnemonic,
                !listconcat([SameOperandsAndResultType, NN_VJP], traits)> {
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 0;
  let description = [{
    Elementwise `}] # mnemonic # [{`; the result has the operand's type.

    ```mlir
    %r = nn.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
}

def NN_NegOp : NN_UnaryOp<"neg", NN_FloatTensor> { let summary = "-x"; }
def NN_ReciprocalOp : NN_UnaryOp<"reciprocal", NN_FloatTensor> {
  let summary = "1 / x";
}
def NN_SqrtOp : NN_UnaryOp<"sqrt", NN_FloatTensor> { let summary = "Square root"; }
def NN_ExpOp : NN_UnaryOp<"exp", NN_FloatTensor> { let summary = "e^x"; }
def NN_LogOp : NN_UnaryOp<"log", NN_FloatTensor> {
  let summary = "Natural logarithm";
}
def NN_ErfOp : NN_UnaryOp<"erf", NN_FloatTensor> { let summary = "Error function"; }
def NN_TanhOp : NN_UnaryOp<"tanh", NN_FloatTensor> {
  let summary = "Hyperbolic tangent";
}
def NN_SigmoidOp : NN_UnaryOp<"sigmoid", NN_FloatTensor> {
  let summary = "1 / (1 + e^-x)";
}
def NN_ReluOp : NN_UnaryOp<"relu", NN_FloatTensor> { let summary = "max(x, 0)"; }
def NN_GeluOp : NN_UnaryOp<"gelu", NN_FloatTensor> {
  let summary = "Gaussian error linear unit (exact, erf form)";
  let description = [{
    `x * 0.5 * (1 + erf(x / sqrt(2)))`, the exact GELU of Hendrycks and
    Gimpel. Canonicalization raises the decomposed form that the ONNX exporter
    writes for `torch.nn.GELU()` to this op.

    ```mlir
    %r = nn.gelu %x : tensor<4x8xf32>
    ```
  }];
}
def NN_SinOp : NN_UnaryOp<"sin", NN_FloatTensor> { let summary = "Sine"; }
def NN_CosOp : NN_UnaryOp<"cos", NN_FloatTensor> { let summary = "Cosine"; }
def NN_FloorOp : NN_UnaryOp<"floor", NN_FloatTensor> {
  let summary = "Round down (no gradient: the derivative is 0 almost everywhere)";
}
def NN_CeilOp : NN_UnaryOp<"ceil", NN_FloatTensor> {
  let summary = "Round up (no gradient)";
}
def NN_RoundOp : NN_UnaryOp<"round", NN_FloatTensor> {
  let summary = "Round to the nearest integer, ties to even (no gradient)";
}
def NN_NotOp : NN_UnaryOp<"not", NN_BoolTensor> { let summary = "Logical not"; }

def NN_ClipOp : NN_PureOp<"clip", [NN_VJP, SameOperandsAndResultType]> {
  let summary = "Clamp to [min, max] (ONNX Clip; ReLU6 is min 0, max 6)";
  let description = [{
    `min(max(x, min), max)` elementwise; NaN stays NaN. The gradient passes
    where `min < x < max` (strictly, as PyTorch's hardtanh and ReLU6) and is
    0 elsewhere. HardSigmoid and HardSwish import as compositions with it.

    ```mlir
    %r = nn.clip %x {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, F32Attr:$min, F32Attr:$max);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def NN_ClipGradOp : NN_PureOp<"clip_grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of nn.clip";
  let description = [{
    `dx = min < x < max ? dy : 0` for `x` (`input`) and the gradient `dy`
    (`grad`) of `nn.clip %x {min, max}`.

    ```mlir
    %dx = nn.clip_grad %x, %dy {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$grad,
                       F32Attr:$min, F32Attr:$max);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def NN_DropoutOp : NN_PureOp<"dropout", [NN_VJP, SameOperandsAndResultType]> {
  let summary = "Dropout in training mode, with a counter-based mask";
  let description = [{
    Zeroes each element with probability `ratio` and scales the others by
    `1 / (1 - ratio)`. The mask is drawn from a counter-based generator keyed
    by the run's seed, the step, the micro-batch's index in the mini-batch
    and the op's `stream` (fixed at import, from the op's name), element by
    element (Kernels.def, dropout_f32): it is the same whatever K, the
    schedule or remat, and a recompute draws the same mask. The gradient is
    the same dropout of the result's gradient.

    ```mlir
    %y = nn.dropout %x {ratio = 1.000000e-01 : f32, stream = 42 : i64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, F32Attr:$ratio, I64Attr:$stream);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def NN_CastOp : NN_PureOp<"cast", [NN_VJP]> {
  let summary = "Element type conversion";
  let description = [{
    Converts each element to the result's element type (ONNX `Cast`). Floats
    to integers truncate toward zero; anything to `i1` is `x != 0`.

    ```mlir
    %f = nn.cast %m : tensor<4x4xi1> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def NN_MatMulOp : NN_PureOp<"matmul", [NN_LayerAnchor, NN_VJP]> {
  let summary = "Batched matrix product (numpy matmul)";
  let description = [{
    Numpy/ONNX `MatMul` on operands of rank 2 or more: the last two dims
    multiply, leading dims broadcast. `trans_lhs` / `trans_rhs` swap an
    operand's last two dims first, `op(lhs) @ op(rhs)`: the kernels read the
    operand transposed (the BLAS's own flags), so a transpose of the last two
    dims feeding a matmul folds into it instead of being copied.

    ```mlir
    %y = nn.matmul %x, %w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
    %s = nn.matmul %q, %k {trans_rhs = true} : (tensor<2x8x64x32xf32>, tensor<2x8x64x32xf32>) -> tensor<2x8x64x64xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs,
                   CArg<"bool", "false">:$transLhs,
                   CArg<"bool", "false">:$transRhs)>,
  ];
  let hasCanonicalizer = 1;
}

def NN_GemmOp : NN_PureOp<"gemm", [NN_LayerAnchor, NN_VJP]> {
  let summary = "General matrix multiply (ONNX Gemm)";
  let description = [{
    `alpha * op(a) * op(b) + beta * c` on 2-D operands, where `op` transposes
    when `trans_a`/`trans_b` is set and `c` broadcasts to the result.

    ```mlir
    %y = nn.gemm %x, %w, %b {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$a, NN_FloatTensor:$b,
                       Optional<NN_FloatTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0f">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasCanonicalizer = 1;
}

def NN_LinearOp : NN_PureOp<"linear", [NN_LayerAnchor, NN_VJP]> {
  let summary = "Fully connected layer: x * W + b";
  let description = [{
    `input` has shape `[..., in]`. `weight` is `[in, out]`, or `[out, in]`
    (PyTorch's layout) when `transpose_weight` is set; the optional `bias` is
    `[out]`. The result is `[..., out]`. Canonicalization raises `nn.matmul`
    followed by a bias `nn.add`, and `nn.gemm`, to this op; the weight keeps the
    layout of its parameter.

    ```mlir
    %y = nn.linear %x, %w, %b {transpose_weight = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_weight);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Normalization and activation over an axis
//===----------------------------------------------------------------------===//

def NN_SoftmaxOp : NN_PureOp<"softmax", [NN_LayerAnchor, NN_VJP]> {
  let summary = "Softmax along one axis";
  let description = [{
    ```mlir
    %p = nn.softmax %s {axis = 3} : tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_AttentionOp : NN_PureOp<"attention", [NN_LayerAnchor, NN_VJP]> {
  let summary = "Scaled dot-product attention, fused";
  let description = [{
    `softmax(scale * query * key^T + bias) * value`, the softmax over the
    keys: `query` is `[N..., T, D]`, `key` `[N..., S, D]`, `value`
    `[N..., S, E]` (the same leading dims: batch and heads) and the result
    `[N..., T, E]`. The optional `bias` broadcasts to the scores
    `[N..., T, S]` (a causal `-inf` mask, an additive padding mask); it is
    a constant or a function of the model's inputs, never of a parameter,
    and gets no gradient. `nn-fuse-attention` forms it from the matmul,
    scale, mask, softmax and matmul chain of an attention; the kernel never
    stores the `T x S` scores.

    ```mlir
    %o = nn.attention %q, %k, %v, %mask {scale = 0.25 : f32} : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<32x32xf32>) -> tensor<8x4x32x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key,
                       NN_FloatTensor:$value,
                       Optional<NN_FloatTensor>:$bias, F32Attr:$scale);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_LayerNormOp : NN_PureOp<"layer_norm", [NN_LayerAnchor, NN_VJP]> {
  let summary = "Layer normalization (ONNX LayerNormalization)";
  let description = [{
    Normalizes over the dims `[axis, rank)` to zero mean and unit variance
    (biased variance, `epsilon` added inside the square root), then multiplies
    by `scale` and adds the optional `bias`, both shaped like the normalized
    dims.

    ```mlir
    %y = nn.layer_norm %x, %g, %b {axis = 2, epsilon = 1.0e-05 : f32} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       Optional<NN_FloatTensor>:$bias,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and batch normalization (NCHW images)
//===----------------------------------------------------------------------===//

def NN_Conv2DOp : NN_PureOp<"conv2d", [NN_LayerAnchor, NN_VJP]> {
  let summary = "2-D convolution (ONNX Conv over NCHW images)";
  let description = [{
    `input` is `[N, C, H, W]`, `weight` `[O, C / groups, kh, kw]` and the
    optional `bias` `[O]`; the result is `[N, O, OH, OW]`. `strides` and
    `dilations` are `[h, w]`, `pads` ONNX's `[top, left, bottom, right]`
    (zero padding). Output channel `o` reads the input channels of its group
    `o / (O / groups)`.

    ```mlir
    %y = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def NN_MaxPool2DOp : NN_PureOp<"max_pool2d", [NN_LayerAnchor, NN_VJP]> {
  let summary = "2-D max pooling (ONNX MaxPool over NCHW images)";
  let description = [{
    The largest input in each window of `kernel` `[kh, kw]` moved by
    `strides`, with `pads` (`[top, left, bottom, right]`, never chosen) and
    `dilations`. The result type gives the output size: ONNX's floor
    formula, or its ceiling when `ceil_mode` is set.

    ```mlir
    %y = nn.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<8x16x32x32xf32> -> tensor<8x16x16x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_AvgPool2DOp : NN_PureOp<"avg_pool2d", [NN_LayerAnchor, NN_VJP]> {
  let summary = "2-D average pooling (ONNX AveragePool, GlobalAveragePool)";
  let description = [{
    The mean of each window of `kernel` moved by `strides` with `pads`
    (`[top, left, bottom, right]`): divided by the number of its positions
    inside the image, or by `kh * kw` with `count_include_pad` (positions past
    the padded image never count). `ceil_mode` as for `nn.max_pool2d`.
    GlobalAveragePool is a window of the whole image.

    ```mlir
    %y = nn.avg_pool2d %x {kernel = array<i64: 8, 8>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : tensor<8x64x8x8xf32> -> tensor<8x64x1x1xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_BatchNormOp : NN_PureOp<"batch_norm", [NN_LayerAnchor, NN_VJP]> {
  let summary = "Batch normalization in training mode (GPipe's per-micro-batch statistics)";
  let description = [{
    Normalizes `input` `[N, C, ...]` per channel with the mean and biased
    variance of this batch (`epsilon` inside the square root), then applies
    `scale` and `bias` (`[C]`). In a pipeline the batch is the micro-batch:
    each micro-batch is normalized with its own statistics, as GPipe does.

    `running_mean` and `running_var` (`[C]`) are the parameters that track
    the statistics for inference; this op does not read their values to
    compute its result. Its gradient op gives each of them the batch's
    contribution (sums of `x - running_mean` and of its square), which are
    accumulated over the micro-batches (and replicas) like gradients; the
    step then updates them from the whole mini-batch with `momentum` (the
    weight of the new statistic, PyTorch's convention) instead of the
    optimizer, so that after a step they equal what the unpipelined model
    computes on the full batch.

    ```mlir
    %y = nn.batch_norm %x, %g, %b, %mean, %var {epsilon = 1.0e-05 : f32, momentum = 1.0e-01 : f32} : (tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       NN_FloatTensor:$bias, NN_FloatTensor:$running_mean,
                       NN_FloatTensor:$running_var,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.1f">:$momentum);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $running_mean `,` $running_var attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Indexing and shape manipulation
//===----------------------------------------------------------------------===//

def NN_GatherOp : NN_PureOp<"gather", [NN_LayerAnchor, NN_VJP]> {
  let summary = "Gather slices along an axis (embedding lookup)";
  let description = [{
    ONNX `Gather`: the result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. With `axis = 0` and a `[vocab, dim]` table it is an
    embedding lookup. Indices must lie in `[0, data.shape[axis])`.

    ```mlir
    %e = nn.gather %table, %ids {axis = 0} : (tensor<32x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$data, NN_IntTensor:$indices,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, results)
  }];
}

def NN_ReshapeOp : NN_PureOp<"reshape", [NN_VJP]> {
  let summary = "Reshape to the result type";
  let description = [{
    Reinterprets the row-major elements with the result's shape; the element
    count must not change.

    ```mlir
    %r = nn.reshape %x : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def NN_TransposeOp : NN_PureOp<"transpose", [NN_VJP]> {
  let summary = "Permute dimensions";
  let description = [{
    Result dim `i` is input dim `perm[i]`.

    ```mlir
    %t = nn.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def NN_SplitOp : NN_PureOp<"split", [NN_VJP]> {
  let summary = "Split into consecutive pieces along an axis";
  let description = [{
    ```mlir
    %q, %k, %v = nn.split %x {axis = 2, sizes = array<i64: 32, 32, 32>} : tensor<2x16x96xf32> -> tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<NN_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
}

def NN_SliceOp : NN_PureOp<"slice", [NN_VJP]> {
  let summary = "Strided slice";
  let description = [{
    Takes `sizes[i]` elements of dim `i` starting at `offsets[i]` every
    `strides[i]` (all positive; one entry per dim).

    ```mlir
    %s = nn.slice %x {offsets = array<i64: 0, 8>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 1>} : tensor<4x16xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$strides);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_InsertSliceOp : NN_PureOp<"insert_slice", [NN_VJP,
    AllTypesMatch<["dest", "result"]>]> {
  let summary = "Write a tensor into a strided slice of another";
  let description = [{
    The inverse of `nn.slice`: the result is `dest` with the elements at
    `offsets[i] + j * strides[i]` (`j` in `[0, source.shape[i])`) of every
    dim `i` replaced by `source`. The written positions must lie inside
    `dest`, exactly as `nn.slice` of `dest` with `sizes = source.shape` would
    read them. Reverse mode writes the gradient of an `nn.slice` into a zero
    tensor of the input's shape with it.

    ```mlir
    %r = nn.insert_slice %dy into %zeros {offsets = array<i64: 0, 8>, strides = array<i64: 1, 1>} : tensor<4x8xf32> into tensor<4x16xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$source, NN_Tensor:$dest,
                       DenseI64ArrayAttr:$offsets, DenseI64ArrayAttr:$strides);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $source `into` $dest attr-dict `:` type($source) `into` type($dest)
  }];
}

def NN_ConcatOp : NN_PureOp<"concat", [NN_VJP]> {
  let summary = "Concatenate along an axis";
  let description = [{
    ```mlir
    %c = nn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<NN_Tensor>:$inputs,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, results)
  }];
}

def NN_UnsqueezeOp : NN_PureOp<"unsqueeze", [NN_VJP]> {
  let summary = "Insert unit dimensions";
  let description = [{
    Inserts a dim of size 1 at each of `axes` (positions in the result,
    sorted, distinct).

    ```mlir
    %u = nn.unsqueeze %x {axes = array<i64: 0, 1>} : tensor<16x16xi1> -> tensor<1x1x16x16xi1>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def NN_CrossEntropyOp : NN_PureOp<"cross_entropy", [NN_LayerAnchor, NN_VJP]> {
  let summary = "Softmax cross-entropy with integer labels, mean reduction";
  let description = [{
    `logits` is `[..., classes]` and `labels` holds one class id per row
    (`logits` without its last dim). The result is the mean over all rows of
    `logsumexp(logits) - logits[label]`.

    ```mlir
    %l = nn.cross_entropy %logits, %labels : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IntTensor:$labels);
  let results = (outs 0DTensorOf<[F32, F16, BF16, F64]>:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
}

def NN_MSEOp : NN_PureOp<"mse", [NN_LayerAnchor, NN_VJP]> {
  let summary = "Mean squared error, mean reduction";
  let description = [{
    ```mlir
    %l = nn.mse %pred, %target : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$target);
  let results = (outs 0DTensorOf<[F32, F16, BF16, F64]>:$result);
  let assemblyFormat = [{
    $input `,` $target attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def NN_ReduceSumOp : NN_PureOp<"reduce_sum", [NN_VJP]> {
  let summary = "Sum over a set of axes";
  let description = [{
    Sums `input` over `axes` (sorted, distinct, each below the rank; empty
    sums nothing). With `keep_dims` the reduced dims stay as size 1,
    otherwise they are dropped. Elements are added in increasing index order
    of the reduced dims, so the result is reproducible bit for bit. Reverse
    mode uses it to sum the gradient of a broadcast operand over its broadcast
    dims.

    ```mlir
    %s = nn.reduce_sum %dy {axes = array<i64: 0, 1>} : tensor<2x16x96xf32> -> tensor<96xf32>
    %k = nn.reduce_sum %dy {axes = array<i64: 1>, keep_dims = true} : tensor<2x16x96xf32> -> tensor<2x1x96xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input,
                   "::llvm::ArrayRef<int64_t>":$axes, "bool":$keepDims)>,
  ];
}

//===----------------------------------------------------------------------===//
// Gradient kernels
//
// Fused backward ops that reverse-mode autodiff emits where a kernel does
// better than the primitive composition. Each takes the forward operands it
// needs (recomputed, never saved statistics) followed by the result gradient
// `grad`. They have no VJP themselves.
//===----------------------------------------------------------------------===//

def NN_GatherGradOp : NN_PureOp<"gather_grad"> {
  let summary = "Gradient of nn.gather: scatter-add into a zero table";
  let description = [{
    The gradient of `nn.gather %data, %indices {axis}` with respect to
    `data`: a zero tensor of the result type (the table's shape) into which
    each slice of `grad` is added at the row its index names, so a row read
    twice gets the sum. `grad` has the gather's result shape,
    `result.shape[:axis] + indices.shape + result.shape[axis+1:]`. Rows are
    added in row-major order of `indices`, so the result is reproducible bit
    for bit. `indices` get no gradient.

    ```mlir
    %dt = nn.gather_grad %ids, %dy {axis = 0} : (tensor<2x16xi64>, tensor<2x16x64xf32>) -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins NN_IntTensor:$indices, NN_FloatTensor:$grad,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def NN_SoftmaxGradOp : NN_PureOp<"softmax_grad", [
    AllTypesMatch<["output", "grad", "result"]>]> {
  let summary = "Gradient of nn.softmax from its output";
  let description = [{
    With `y = softmax(x)` along `axis` (`output`) and the gradient `dy` of
    `y` (`grad`), the gradient of `x`:
    `dx = y * (dy - sum(dy * y, axis, keep_dims))`.

    ```mlir
    %dx = nn.softmax_grad %y, %dy {axis = 3} : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$output, NN_FloatTensor:$grad,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($result)";
}

def NN_AttentionGradOp : NN_PureOp<"attention_grad"> {
  let summary = "Gradient of nn.attention";
  let description = [{
    The gradients of `query`, `key` and `value` of
    `nn.attention %query, %key, %value[, %bias] {scale}` from the gradient
    `grad` of its result, recomputing the attention probabilities row by
    row (nothing of the forward is kept but its operands). The bias gets
    no gradient.

    ```mlir
    %dq, %dk, %dv = nn.attention_grad %q, %k, %v, %do, %mask {scale = 0.25 : f32} : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<32x32xf32>) -> (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key,
                       NN_FloatTensor:$value, NN_FloatTensor:$grad,
                       Optional<NN_FloatTensor>:$bias, F32Attr:$scale);
  let results = (outs NN_FloatTensor:$query_grad, NN_FloatTensor:$key_grad,
                      NN_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $grad (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_LayerNormGradOp : NN_PureOp<"layer_norm_grad"> {
  let summary = "Gradient of nn.layer_norm";
  let description = [{
    Gradients of `y = layer_norm(x, scale, bias) {axis, epsilon}` from `x`
    (`input`), `scale` and the gradient `dy` of `y` (`grad`). The mean and
    `rstd = 1 / sqrt(var + epsilon)` over the normalized dims `[axis, rank)`
    are recomputed; with `xhat = (x - mean) * rstd`, `g = dy * scale` and
    means over the normalized dims:

    - `input_grad = rstd * (g - mean(g) - xhat * mean(g * xhat))`
    - `scale_grad = sum(dy * xhat)` over the leading dims `[0, axis)`
    - `bias_grad = sum(dy)` over the leading dims

    `scale_grad` and `bias_grad` have the shape of `scale`; a layer norm
    without bias leaves `bias_grad` unused.

    ```mlir
    %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy {axis = 2, epsilon = 1.0e-05 : f32} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       NN_FloatTensor:$grad,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$scale_grad,
                      NN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def NN_Conv2DGradOp : NN_PureOp<"conv2d_grad"> {
  let summary = "Gradient of nn.conv2d";
  let description = [{
    From the convolution's `input`, `weight` and the gradient `grad` of its
    result, with the convolution's attributes: the gradients of the input,
    of the weight (summed over the images) and of a bias (`[O]`, `grad`
    summed over images and positions; unused when the convolution has
    none).

    ```mlir
    %dx, %dw, %db = nn.conv2d_grad %x, %w, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<8x16x32x32xf32>) -> (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       NN_FloatTensor:$grad,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$weight_grad,
                      NN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def NN_MaxPool2DGradOp : NN_PureOp<"max_pool2d_grad"> {
  let summary = "Gradient of nn.max_pool2d";
  let description = [{
    Each output position's gradient goes to the first largest input of its
    window (row-major), the one the forward picked; the window's attributes
    are the pooling's.

    ```mlir
    %dx = nn.max_pool2d_grad %x, %dy {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x16x32x32xf32>, tensor<8x16x16x16xf32>) -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$grad,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def NN_AvgPool2DGradOp : NN_PureOp<"avg_pool2d_grad"> {
  let summary = "Gradient of nn.avg_pool2d";
  let description = [{
    Each output position's gradient, divided by its window's divisor, is
    added to every input position of the window. The result type is the
    pooling's input type.

    ```mlir
    %dx = nn.avg_pool2d_grad %dy {kernel = array<i64: 8, 8>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : tensor<8x64x1x1xf32> -> tensor<8x64x8x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
}

def NN_BatchNormGradOp : NN_PureOp<"batch_norm_grad"> {
  let summary = "Gradient of nn.batch_norm, and the batch's running-statistics contribution";
  let description = [{
    From the batch norm's `input`, `scale`, `running_mean` and the gradient
    `grad` of its result: the gradients of the input, scale and bias, and
    the batch's contribution to the running statistics around the running
    mean `r` (which stays fixed during a step): `mean_stat = sum(x - r)` and
    `var_stat = sum((x - r)^2)` per channel. Accumulated over the step's
    micro-batches like gradients, they give the whole batch's mean and
    variance at the step (`nn.batch_norm`).

    ```mlir
    %dx, %dg, %db, %sm, %sv = nn.batch_norm_grad %x, %g, %mean, %dy {epsilon = 1.0e-05 : f32} : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16x4x4xf32>) -> (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       NN_FloatTensor:$running_mean, NN_FloatTensor:$grad,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$scale_grad,
                      NN_FloatTensor:$bias_grad, NN_FloatTensor:$mean_stat,
                      NN_FloatTensor:$var_stat);
  let assemblyFormat = [{
    $input `,` $scale `,` $running_mean `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def NN_GeluGradOp : NN_PureOp<"gelu_grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of nn.gelu";
  let description = [{
    With `x` (`input`) and the gradient `dy` of `gelu(x)` (`grad`):
    `dx = dy * (Phi(x) + x * phi(x))`, where `Phi(x) = 0.5 * (1 + erf(x /
    sqrt(2)))` and `phi(x) = exp(-x^2 / 2) / sqrt(2 * pi)`.

    ```mlir
    %dx = nn.gelu_grad %x, %dy : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$grad);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def NN_CrossEntropyGradOp : NN_PureOp<"cross_entropy_grad"> {
  let summary = "Gradient of nn.cross_entropy with respect to the logits";
  let description = [{
    For `loss = nn.cross_entropy %logits, %labels` (mean over the `N` rows)
    and the scalar gradient `dloss` of the loss (`grad`):
    `dlogits = dloss * (softmax(logits) - onehot(labels)) / N`, softmax over
    the last (class) dim. The result has the type of `logits`; the labels
    get no gradient.

    ```mlir
    %dl = nn.cross_entropy_grad %logits, %labels, %dloss : (tensor<2x16x32xf32>, tensor<2x16xi64>, tensor<f32>) -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IntTensor:$labels,
                       0DTensorOf<[F32, F16, BF16, F64]>:$grad);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

def NN_LayerOp : NN_Op<"layer", [IsolatedFromAbove, NN_Cost,
    RecursiveMemoryEffects, SingleBlock]> {
  let summary = "One layer: the unit the pipeline partitioner cuts at";
  let description = [{
    A segment of the network between two cut points. Its body is isolated
    from above: activations come in as block arguments, parameters are read
    with `nn.param`, and constants live inside. `nn-form-layers` builds these
    from a flat function; `name` is readable (the common ONNX name scope, or
    the preset's module path).

    ```mlir
    %h = nn.layer "blocks.0" (%x) : (tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
    ^bb0(%a: tensor<2x16x32xf32>):
      %r = nn.relu %a : tensor<2x16x32xf32>
      nn.yield %r : tensor<2x16x32xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<NN_Tensor>:$inputs);
  let results = (outs Variadic<NN_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

//===----------------------------------------------------------------------===//
// Fused elementwise loops
//===----------------------------------------------------------------------===//

def NN_FusedOp : NN_Op<"fused", [IsolatedFromAbove, NN_Cost, Pure,
    SingleBlock]> {
  let summary = "A chain of elementwise ops computed in one loop";
  let description = [{
    Elementwise ops (`nn-fuse-elementwise` groups them in a stage function)
    evaluated together at every point of the results' common shape: one
    pass over memory instead of one per op, and no buffers for the values
    between them. The body is the ops as they were, on tensors (inputs
    broadcast to the results' shape as the ops broadcast them), so the
    interpreter runs it op by op; the code generator emits one vectorized
    loop computing each op's float math (ScalarMath.h) in the same order,
    bitwise what the ops' kernels compute. Every result has the same shape.

    ```mlir
    %r = nn.fused (%x, %b) : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>, %c: tensor<64xf32>):
      %s = nn.add %a, %c : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
      %g = nn.gelu %s : tensor<8x64xf32>
      nn.yield %g : tensor<8x64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<NN_Tensor>:$inputs);
  let results = (outs Variadic<NN_FloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// Whether `op` may be in a fused body: a float elementwise op whose
    /// math ScalarMath.h defines.
    static bool isFusible(::mlir::Operation *op);
  }];
}

def NN_YieldOp : NN_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["LayerOp", "FusedOp"]>]> {
  let summary = "Returns a layer's or a fused loop's results";
  let description = [{
    ```mlir
    nn.yield %r : tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Variadic<NN_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // GPIPE_DIALECT_NN_IR_NNOPS_TD
