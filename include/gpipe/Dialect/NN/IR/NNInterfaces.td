//===- NNInterfaces.td - nn op interfaces ------------------*- tablegen -*-===//
//
// Op interfaces every `nn` op implements: its cost for the partitioner and,
// for autodiff, its vector-Jacobian product.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_IR_NNINTERFACES_TD
#define GPIPE_DIALECT_NN_IR_NNINTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::gpipe::nn";
  let description = [{
    The work an op does, as the partitioner's cost model needs it: floating
    point operations, bytes read and written (operands and results, at their
    element width), and bytes of parameters the op introduces. A fused op
    counts the work of its primitive form; a region op sums its body.
  }];
  let methods = [
    InterfaceMethod<"Returns the cost of one execution of this op.",
      "::mlir::gpipe::nn::OpCost", "getCost", (ins), [{}], [{
        return ::mlir::gpipe::nn::detail::elementwiseCost($_op, 1);
      }]>,
  ];
}

def NN_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::mlir::gpipe::nn";
  let description = [{
    Reverse-mode differentiation of one op: given the gradients of its results
    (one per result, a null value for a result with no gradient), build the
    gradients of its operands at the builder's insertion point, one per
    operand and each of exactly the operand's type. Operands that are not
    differentiable (integer indices, labels, masks, the condition of
    `nn.where`) get a null gradient. A rule may use the op's operands and
    results: the backward function recomputes the forward before running
    reverse mode, so both are live there. The gradient of an operand that was
    broadcast is summed over its broadcast dims.

    Every forward `nn` op implements it: sources (`nn.param`, `nn.constant`)
    have no operands, `nn.equal` and `nn.not` give null gradients. The fused
    `*_grad` ops reverse mode emits do not (no second-order derivatives).
    `nn.layer` does not either: `buildBackwardFunction` differentiates
    through its body.
  }];
  let methods = [
    InterfaceMethod<"Builds operand gradients from result gradients.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // GPIPE_DIALECT_NN_IR_NNINTERFACES_TD
