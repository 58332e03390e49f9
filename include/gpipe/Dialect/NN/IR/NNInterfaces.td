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
    (a null value for a result with no gradient), build the gradients of its
    operands at the builder's insertion point. Operands that are not
    differentiable (integer indices, masks) get a null gradient.
  }];
  let methods = [
    InterfaceMethod<"Builds operand gradients from result gradients.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // GPIPE_DIALECT_NN_IR_NNINTERFACES_TD
