//===- NNBase.td - nn dialect definition -------------------*- tablegen -*-===//
//
// The `nn` dialect: the network as gpipe sees it. Static shapes, value
// semantics, ops close to ONNX with numpy broadcasting.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_IR_NNBASE_TD
#define GPIPE_DIALECT_NN_IR_NNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::mlir::gpipe::nn";
  let summary = "A static-shape network dialect close to ONNX";
  let description = [{
    The `nn` dialect holds the sequential network that gpipe pipelines. Every
    value is a statically shaped `tensor`; ops follow ONNX semantics with numpy
    broadcasting. Parameters are module-level symbols (`nn.parameter`) read by
    `nn.param`, so their names (ONNX initializer names or preset names) survive
    every transformation. The partitioner cuts the network at `nn.layer`
    boundaries, which `nn-form-layers` finds automatically.

    Every op reports its cost (FLOPs, bytes read and written, parameter bytes)
    through `NN_CostOpInterface`; fused ops (`nn.linear`, `nn.gelu`) are reached
    by canonicalization from the primitive forms that ONNX exporters write.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 0;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The discardable attributes of the dialect, all on `func.func`s and
    /// verified by `verifyOperationAttribute`: a forward to differentiate
    /// (unit), the parameters whose gradients a backward returns (symbol
    /// refs), the argument positions of its leading input gradients, the loss
    /// scale of its seeds (finite float), and the number of activations a
    /// forward saves for its backward, and the number of values the input half
    /// of a split backward hands to its weight half.
    static constexpr ::llvm::StringLiteral kDifferentiateAttrName =
        "nn.differentiate";
    static constexpr ::llvm::StringLiteral kParamGradsAttrName =
        "nn.param_grads";
    static constexpr ::llvm::StringLiteral kInputGradsAttrName =
        "nn.input_grads";
    static constexpr ::llvm::StringLiteral kLossScaleAttrName =
        "nn.loss_scale";
    static constexpr ::llvm::StringLiteral kSavedCountAttrName =
        "nn.saved_count";
    static constexpr ::llvm::StringLiteral kDeferredCountAttrName =
        "nn.deferred_count";
    /// On an `nn.parameter` (unit): a batch norm's running statistic whose
    /// batch norm `nn-inference` replaced by its running-statistics form;
    /// the parameter is still laid out with the statistics, after the
    /// trainable parameters.
    static constexpr ::llvm::StringLiteral kRunningStatisticAttrName =
        "nn.running_statistic";
    /// On the module: how `nn-pack-inputs` packed the network's inputs into
    /// one, an array of {name, offset, type} dictionaries in order.
    static constexpr ::llvm::StringLiteral kInputPartsAttrName =
        "nn.input_parts";
    /// `nn.deferred_count` on `func` (0 when absent): how many values the
    /// input half of a split backward hands to its weight half.
    static unsigned getDeferredCount(::mlir::Operation *func);
    /// The parameter gradients a backward (or a split backward's weight
    /// half) `func` computes by accumulating in place: result index -> the
    /// nn.gemm computing it, for each result from `firstParamGrad` on (one
    /// per nn.param_grads entry) that is the result of an f32 nn.gemm
    /// without an addend, in the function's own body, used by nothing but
    /// the return. The compiled code and the pipeline interpreter run such a
    /// GEMM into the rank's gradient of the parameter with beta = 1 (beta =
    /// 0 for the step's first micro-batch): the weight gradient's product
    /// adds into the sum over the micro-batches without a buffer of its own
    /// and without a separate addition (Megatron-LM's gradient-accumulation
    /// fusion).
    static ::llvm::SmallVector<std::pair<unsigned, ::mlir::Operation *>>
    getAccumulatingGemms(::mlir::Operation *func, unsigned firstParamGrad);
  }];
}

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits>;

// Element types the network computes in. i1 carries masks, i64 token ids and
// class labels.
def NN_Float : AnyTypeOf<[F32, F16, BF16, F64]>;
def NN_ElementType : AnyTypeOf<[F32, F16, BF16, F64, I1, I32, I64]>;
def NN_Tensor : StaticShapeTensorOf<[F32, F16, BF16, F64, I1, I32, I64]>;
def NN_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16, F64]>;
def NN_IntTensor : StaticShapeTensorOf<[I32, I64]>;
def NN_BoolTensor : StaticShapeTensorOf<[I1]>;

#endif // GPIPE_DIALECT_NN_IR_NNBASE_TD
