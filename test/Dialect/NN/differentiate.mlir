// RUN: gpipe-opt %s --nn-differentiate -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpipe-opt %s --nn-differentiate=loss-scale=0.25 -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SCALE

// Reverse mode through every op family. Each function marked
// `nn.differentiate` gets `<name>_bwd(inputs..., result seeds...) ->
// (float input grads..., param grads...)` right after it; the body recomputes
// the forward ops the gradients need, then applies the VJPs in reverse order.

//===----------------------------------------------------------------------===//
// Binary elementwise ops: broadcast operands get reduced gradients
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @add_broadcast(
// CHECK-LABEL: func.func @add_broadcast_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<4x1xf32>, %[[DZ:.*]]: tensor<4x3xf32>)
// CHECK-SAME:    -> (tensor<4x3xf32>, tensor<3xf32>, tensor<4x1xf32>)
// CHECK-SAME:    attributes {nn.input_grads = array<i64: 0, 1, 2>, nn.param_grads = []}
// CHECK-NEXT:    %[[DC:.*]] = nn.reduce_sum %[[DZ]] {axes = array<i64: 1>} : tensor<4x3xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[DCR:.*]] = nn.reshape %[[DC]] : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %[[DB:.*]] = nn.reduce_sum %[[DZ]] {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    return %[[DZ]], %[[DB]], %[[DCR]]
func.func @add_broadcast(%x: tensor<4x3xf32>, %b: tensor<3xf32>, %c: tensor<4x1xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = nn.add %y, %c : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @sub_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4x3xf32>, %[[S:.*]]: tensor<f32>, %[[DY:.*]]: tensor<4x3xf32>)
// CHECK-NEXT:    %[[SUM:.*]] = nn.reduce_sum %[[DY]] {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
// CHECK-NEXT:    %[[DS:.*]] = nn.neg %[[SUM]] : tensor<f32>
// CHECK-NEXT:    return %[[DY]], %[[DS]]
func.func @sub(%x: tensor<4x3xf32>, %s: tensor<f32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.sub %x, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @mul_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4x3xf32>, %[[W:.*]]: tensor<3xf32>, %[[DY:.*]]: tensor<4x3xf32>)
// CHECK-NEXT:    %[[DX:.*]] = nn.mul %[[DY]], %[[W]] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[DYX:.*]] = nn.mul %[[DY]], %[[X]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[DW:.*]] = nn.reduce_sum %[[DYX]] {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    return %[[DX]], %[[DW]]
func.func @mul(%x: tensor<4x3xf32>, %w: tensor<3xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// d(x / d) = dy / d and -dy * y / d.
// CHECK-LABEL: func.func @div_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4x3xf32>, %[[D:.*]]: tensor<4x3xf32>, %[[DY:.*]]: tensor<4x3xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.div %[[X]], %[[D]]
// CHECK-NEXT:    %[[DX:.*]] = nn.div %[[DY]], %[[D]]
// CHECK-NEXT:    %[[DYY:.*]] = nn.mul %[[DY]], %[[Y]]
// CHECK-NEXT:    %[[Q:.*]] = nn.div %[[DYY]], %[[D]]
// CHECK-NEXT:    %[[DD:.*]] = nn.neg %[[Q]]
// CHECK-NEXT:    return %[[DX]], %[[DD]]
func.func @div(%x: tensor<4x3xf32>, %d: tensor<4x3xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.div %x, %d : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// d(x ^ e) = dy * e * x ^ (e - 1) and dy * y * log(x) (positive bases).
// CHECK-LABEL: func.func @pow_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4x3xf32>, %[[E:.*]]: tensor<4x3xf32>, %[[DY:.*]]: tensor<4x3xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.pow %[[X]], %[[E]]
// CHECK-NEXT:    %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[EM1:.*]] = nn.sub %[[E]], %[[ONE]]
// CHECK-NEXT:    %[[P:.*]] = nn.pow %[[X]], %[[EM1]]
// CHECK-NEXT:    %[[SLOPE:.*]] = nn.mul %[[E]], %[[P]]
// CHECK-NEXT:    %[[DX:.*]] = nn.mul %[[DY]], %[[SLOPE]]
// CHECK-NEXT:    %[[LOG:.*]] = nn.log %[[X]]
// CHECK-NEXT:    %[[YLOG:.*]] = nn.mul %[[Y]], %[[LOG]]
// CHECK-NEXT:    %[[DE:.*]] = nn.mul %[[DY]], %[[YLOG]]
// CHECK-NEXT:    return %[[DX]], %[[DE]]
func.func @pow(%x: tensor<4x3xf32>, %e: tensor<4x3xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.pow %x, %e : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// A constant exponent gets no gradient: no log is built.
// CHECK-LABEL: func.func @pow_constant_exponent_bwd
// CHECK-NOT:     nn.log
// CHECK:         return
func.func @pow_constant_exponent(%x: tensor<4x3xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %two = nn.constant dense<2.0> : tensor<f32>
  %y = nn.pow %x, %two : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Unary elementwise ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @neg_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[DX:.*]] = nn.neg %[[DY]]
// CHECK-NEXT:    return %[[DX]]
func.func @neg(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.neg %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @reciprocal_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.reciprocal %[[X]]
// CHECK-NEXT:    %[[Y2:.*]] = nn.mul %[[Y]], %[[Y]]
// CHECK-NEXT:    %[[P:.*]] = nn.mul %[[DY]], %[[Y2]]
// CHECK-NEXT:    %[[DX:.*]] = nn.neg %[[P]]
// CHECK-NEXT:    return %[[DX]]
func.func @reciprocal(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.reciprocal %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @sqrt_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.sqrt %[[X]]
// CHECK-NEXT:    %[[HALF:.*]] = nn.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %[[H:.*]] = nn.mul %[[DY]], %[[HALF]]
// CHECK-NEXT:    %[[DX:.*]] = nn.div %[[H]], %[[Y]]
// CHECK-NEXT:    return %[[DX]]
func.func @sqrt(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.sqrt %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @exp_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.exp %[[X]]
// CHECK-NEXT:    %[[DX:.*]] = nn.mul %[[DY]], %[[Y]]
// CHECK-NEXT:    return %[[DX]]
func.func @exp(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @log_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[DX:.*]] = nn.div %[[DY]], %[[X]]
// CHECK-NEXT:    return %[[DX]]
func.func @log(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.log %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// d erf(x) = 2 / sqrt(pi) * exp(-x^2).
// CHECK-LABEL: func.func @erf_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[X2:.*]] = nn.mul %[[X]], %[[X]]
// CHECK-NEXT:    %[[NX2:.*]] = nn.neg %[[X2]]
// CHECK-NEXT:    %[[G:.*]] = nn.exp %[[NX2]]
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<1.12837923> : tensor<f32>
// CHECK-NEXT:    %[[SLOPE:.*]] = nn.mul %[[G]], %[[C]]
// CHECK-NEXT:    %[[DX:.*]] = nn.mul %[[DY]], %[[SLOPE]]
// CHECK-NEXT:    return %[[DX]]
func.func @erf(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.erf %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @tanh_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.tanh %[[X]]
// CHECK-NEXT:    %[[Y2:.*]] = nn.mul %[[Y]], %[[Y]]
// CHECK-NEXT:    %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[SLOPE:.*]] = nn.sub %[[ONE]], %[[Y2]]
// CHECK-NEXT:    %[[DX:.*]] = nn.mul %[[DY]], %[[SLOPE]]
// CHECK-NEXT:    return %[[DX]]
func.func @tanh(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.tanh %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @sigmoid_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.sigmoid %[[X]]
// CHECK-NEXT:    %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[OMY:.*]] = nn.sub %[[ONE]], %[[Y]]
// CHECK-NEXT:    %[[SLOPE:.*]] = nn.mul %[[Y]], %[[OMY]]
// CHECK-NEXT:    %[[DX:.*]] = nn.mul %[[DY]], %[[SLOPE]]
// CHECK-NEXT:    return %[[DX]]
func.func @sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.sigmoid %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// The gradient passes where the output is not 0.
// CHECK-LABEL: func.func @relu_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.relu %[[X]]
// CHECK-NEXT:    %[[ZERO:.*]] = nn.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[OFF:.*]] = nn.equal %[[Y]], %[[ZERO]] : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
// CHECK-NEXT:    %[[DX:.*]] = nn.where %[[OFF]], %[[ZERO]], %[[DY]]
// CHECK-NEXT:    return %[[DX]]
func.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.relu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @gelu_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[DX:.*]] = nn.gelu_grad %[[X]], %[[DY]] : tensor<4xf32>
// CHECK-NEXT:    return %[[DX]]
func.func @gelu(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.gelu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Selection and casts: masks, conditions and integers get no gradient
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @where_equal_not_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4xf32>, %[[FILL:.*]]: tensor<f32>, %[[IDS:.*]]: tensor<2x4xi64>, %[[DY:.*]]: tensor<2x4xf32>)
// CHECK-SAME:    -> (tensor<2x4xf32>, tensor<f32>)
// CHECK-SAME:    nn.input_grads = array<i64: 0, 1>
// CHECK:         %[[PAD:.*]] = nn.equal %[[IDS]]
// CHECK-NEXT:    %[[KEEP:.*]] = nn.not %[[PAD]]
// CHECK-NEXT:    %[[ZERO:.*]] = nn.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[DX:.*]] = nn.where %[[KEEP]], %[[DY]], %[[ZERO]]
// CHECK-NEXT:    %[[DE:.*]] = nn.where %[[KEEP]], %[[ZERO]], %[[DY]]
// CHECK-NEXT:    %[[DFILL:.*]] = nn.reduce_sum %[[DE]] {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32>
// CHECK-NEXT:    return %[[DX]], %[[DFILL]]
func.func @where_equal_not(%x: tensor<2x4xf32>, %fill: tensor<f32>, %ids: tensor<2x4xi64>) -> tensor<2x4xf32> attributes {nn.differentiate} {
  %zero = nn.constant dense<0> : tensor<i64>
  %pad = nn.equal %ids, %zero : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
  %keep = nn.not %pad : tensor<2x4xi1>
  %y = nn.where %keep, %x, %fill : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// Float to float casts back; the boolean input gets nothing.
// CHECK-LABEL: func.func @cast_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[M:.*]]: tensor<4xi1>, %[[DY:.*]]: tensor<4xf16>) -> tensor<4xf32>
// CHECK-SAME:    nn.input_grads = array<i64: 0>
// CHECK-NEXT:    %[[MF:.*]] = nn.cast %[[M]] : tensor<4xi1> -> tensor<4xf16>
// CHECK-NEXT:    %[[DH:.*]] = nn.mul %[[DY]], %[[MF]]
// CHECK-NEXT:    %[[DX:.*]] = nn.cast %[[DH]] : tensor<4xf16> -> tensor<4xf32>
// CHECK-NEXT:    return %[[DX]]
func.func @cast(%x: tensor<4xf32>, %m: tensor<4xi1>) -> tensor<4xf16> attributes {nn.differentiate} {
  %h = nn.cast %x : tensor<4xf32> -> tensor<4xf16>
  %mf = nn.cast %m : tensor<4xi1> -> tensor<4xf16>
  %y = nn.mul %h, %mf : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// dA = dY @ B^T and dB = A^T @ dY, the transposes read by the matmuls (no
// transpose op), summed over the batch dims each operand was broadcast
// along.
// CHECK-LABEL: func.func @matmul_batched_broadcast_bwd
// CHECK-SAME:    (%[[A:.*]]: tensor<2x1x3x4xf32>, %[[B:.*]]: tensor<5x4x2xf32>, %[[DY:.*]]: tensor<2x5x3x2xf32>)
// CHECK-NEXT:    %[[DA5:.*]] = nn.matmul %[[DY]], %[[B]] {trans_rhs = true} : (tensor<2x5x3x2xf32>, tensor<5x4x2xf32>) -> tensor<2x5x3x4xf32>
// CHECK-NEXT:    %[[DAS:.*]] = nn.reduce_sum %[[DA5]] {axes = array<i64: 1>} : tensor<2x5x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DA:.*]] = nn.reshape %[[DAS]] : tensor<2x3x4xf32> -> tensor<2x1x3x4xf32>
// CHECK-NEXT:    %[[DB2:.*]] = nn.matmul %[[A]], %[[DY]] {trans_lhs = true} : (tensor<2x1x3x4xf32>, tensor<2x5x3x2xf32>) -> tensor<2x5x4x2xf32>
// CHECK-NEXT:    %[[DB:.*]] = nn.reduce_sum %[[DB2]] {axes = array<i64: 0>} : tensor<2x5x4x2xf32> -> tensor<5x4x2xf32>
// CHECK-NEXT:    return %[[DA]], %[[DB]]
func.func @matmul_batched_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32> attributes {nn.differentiate} {
  %y = nn.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32>
  return %y : tensor<2x5x3x2xf32>
}

// Both operands transposed, y = A^T @ B^T: dA = (dY @ B)^T = B^T @ dY^T
// and dB = (A @ dY)^T = dY^T @ A^T, each one matmul with both flags set.
// CHECK-LABEL: func.func @matmul_both_transposed_bwd
// CHECK-SAME:    (%[[A:.*]]: tensor<2x4x3xf32>, %[[B:.*]]: tensor<2x5x4xf32>, %[[DY:.*]]: tensor<2x3x5xf32>)
// CHECK-NEXT:    %[[DA:.*]] = nn.matmul %[[B]], %[[DY]] {trans_lhs = true, trans_rhs = true} : (tensor<2x5x4xf32>, tensor<2x3x5xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %[[DB:.*]] = nn.matmul %[[DY]], %[[A]] {trans_lhs = true, trans_rhs = true} : (tensor<2x3x5xf32>, tensor<2x4x3xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT:    return %[[DA]], %[[DB]]
func.func @matmul_both_transposed(%a: tensor<2x4x3xf32>, %b: tensor<2x5x4xf32>) -> tensor<2x3x5xf32> attributes {nn.differentiate} {
  %y = nn.matmul %a, %b {trans_lhs = true, trans_rhs = true} : (tensor<2x4x3xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// Only the left operand transposed, y = A^T @ B: dA = B @ dY^T, dB = A @ dY.
// CHECK-LABEL: func.func @matmul_lhs_transposed_bwd
// CHECK-SAME:    (%[[A:.*]]: tensor<2x4x3xf32>, %[[B:.*]]: tensor<2x4x5xf32>, %[[DY:.*]]: tensor<2x3x5xf32>)
// CHECK-NEXT:    %[[DA:.*]] = nn.matmul %[[B]], %[[DY]] {trans_rhs = true} : (tensor<2x4x5xf32>, tensor<2x3x5xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %[[DB:.*]] = nn.matmul %[[A]], %[[DY]] : (tensor<2x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
// CHECK-NEXT:    return %[[DA]], %[[DB]]
func.func @matmul_lhs_transposed(%a: tensor<2x4x3xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> attributes {nn.differentiate} {
  %y = nn.matmul %a, %b {trans_lhs = true} : (tensor<2x4x3xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// A transposed 2-D weight, y = X @ W^T: dX is a linear layer reading W as
// stored, dW = dY^T @ X over the flattened rows.
// CHECK-LABEL: func.func @matmul_weight_transposed_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[W:.*]]: tensor<5x4xf32>, %[[DY:.*]]: tensor<2x3x5xf32>)
// CHECK-NEXT:    %[[DX:.*]] = nn.linear %[[DY]], %[[W]] : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DYF:.*]] = nn.reshape %[[DY]] : tensor<2x3x5xf32> -> tensor<6x5xf32>
// CHECK-NEXT:    %[[XF:.*]] = nn.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %[[DW:.*]] = nn.gemm %[[DYF]], %[[XF]] {trans_a = true} : (tensor<6x5xf32>, tensor<6x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    return %[[DX]], %[[DW]]
func.func @matmul_weight_transposed(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>) -> tensor<2x3x5xf32> attributes {nn.differentiate} {
  %y = nn.matmul %x, %w {trans_rhs = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// A 2-D right operand: the input gradient is a linear layer and the weight
// gradient one GEMM over the flattened rows.
// CHECK-LABEL: func.func @matmul_weight_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[W:.*]]: tensor<4x5xf32>, %[[DY:.*]]: tensor<2x3x5xf32>)
// CHECK-NEXT:    %[[DX:.*]] = nn.linear %[[DY]], %[[W]] {transpose_weight = true} : (tensor<2x3x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DYF:.*]] = nn.reshape %[[DY]] : tensor<2x3x5xf32> -> tensor<6x5xf32>
// CHECK-NEXT:    %[[XF:.*]] = nn.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %[[DW:.*]] = nn.gemm %[[XF]], %[[DYF]] {trans_a = true} : (tensor<6x4xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    return %[[DX]], %[[DW]]
func.func @matmul_weight(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>) -> tensor<2x3x5xf32> attributes {nn.differentiate} {
  %y = nn.matmul %x, %w : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// The transposes fold into the GEMM flags; alpha scales both products, beta
// the addend's (reduced) gradient.
// CHECK-LABEL: func.func @gemm_bwd
// CHECK-SAME:    (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<5x4xf32>, %[[C:.*]]: tensor<5xf32>, %[[DY:.*]]: tensor<3x5xf32>)
// CHECK-NEXT:    %[[DA:.*]] = nn.gemm %[[B]], %[[DY]] {alpha = 5.000000e-01 : f32, trans_a = true, trans_b = true} : (tensor<5x4xf32>, tensor<3x5xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[DB:.*]] = nn.gemm %[[DY]], %[[A]] {alpha = 5.000000e-01 : f32, trans_a = true, trans_b = true} : (tensor<3x5xf32>, tensor<4x3xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    %[[BETA:.*]] = nn.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[DYB:.*]] = nn.mul %[[DY]], %[[BETA]]
// CHECK-NEXT:    %[[DC:.*]] = nn.reduce_sum %[[DYB]] {axes = array<i64: 0>} : tensor<3x5xf32> -> tensor<5xf32>
// CHECK-NEXT:    return %[[DA]], %[[DB]], %[[DC]]
func.func @gemm(%a: tensor<4x3xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> attributes {nn.differentiate} {
  %y = nn.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = true, trans_b = true} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// CHECK-LABEL: func.func @gemm_plain_bwd
// CHECK-SAME:    (%[[A:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<4x5xf32>, %[[DY:.*]]: tensor<3x5xf32>)
// CHECK-NEXT:    %[[DA:.*]] = nn.gemm %[[DY]], %[[B]] {trans_b = true} : (tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[DB:.*]] = nn.gemm %[[A]], %[[DY]] {trans_a = true} : (tensor<3x4xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    return %[[DA]], %[[DB]]
func.func @gemm_plain(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> attributes {nn.differentiate} {
  %y = nn.gemm %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// CHECK-LABEL: func.func @linear_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[W:.*]]: tensor<4x5xf32>, %[[B:.*]]: tensor<5xf32>, %[[DY:.*]]: tensor<2x3x5xf32>)
// CHECK-NEXT:    %[[DX:.*]] = nn.linear %[[DY]], %[[W]] {transpose_weight = true} : (tensor<2x3x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[XF:.*]] = nn.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %[[DYF:.*]] = nn.reshape %[[DY]] : tensor<2x3x5xf32> -> tensor<6x5xf32>
// CHECK-NEXT:    %[[DW:.*]] = nn.gemm %[[XF]], %[[DYF]] {trans_a = true} : (tensor<6x4xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    %[[DB:.*]] = nn.reduce_sum %[[DY]] {axes = array<i64: 0, 1>} : tensor<2x3x5xf32> -> tensor<5xf32>
// CHECK-NEXT:    return %[[DX]], %[[DW]], %[[DB]]
func.func @linear(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>, %b: tensor<5xf32>) -> tensor<2x3x5xf32> attributes {nn.differentiate} {
  %y = nn.linear %x, %w, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// PyTorch's [out, in] layout: dx = dy @ W, dW = dy^T @ x.
// CHECK-LABEL: func.func @linear_transposed_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<3x4xf32>, %[[W:.*]]: tensor<5x4xf32>, %[[DY:.*]]: tensor<3x5xf32>)
// CHECK-NEXT:    %[[DX:.*]] = nn.linear %[[DY]], %[[W]] : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[DW:.*]] = nn.gemm %[[DY]], %[[X]] {trans_a = true} : (tensor<3x5xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    return %[[DX]], %[[DW]]
func.func @linear_transposed(%x: tensor<3x4xf32>, %w: tensor<5x4xf32>) -> tensor<3x5xf32> attributes {nn.differentiate} {
  %y = nn.linear %x, %w {transpose_weight = true} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Normalization: fused gradient kernels
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @softmax_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[DY:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.softmax %[[X]] {axis = 2 : i64}
// CHECK-NEXT:    %[[DX:.*]] = nn.softmax_grad %[[Y]], %[[DY]] {axis = 2 : i64} : tensor<2x3x4xf32>
// CHECK-NEXT:    return %[[DX]]
func.func @softmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> attributes {nn.differentiate} {
  %y = nn.softmax %x {axis = 2} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @layer_norm_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[G:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = nn.layer_norm_grad %[[X]], %[[G]], %[[DY]] {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    return %[[DX]], %[[DG]], %[[DB]]
func.func @layer_norm(%x: tensor<2x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> attributes {nn.differentiate} {
  %y = nn.layer_norm %x, %g, %b {axis = 2, epsilon = 1.0e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// Without a bias the bias gradient is left unused.
// CHECK-LABEL: func.func @layer_norm_without_bias_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[G:.*]]: tensor<3x4xf32>, %[[DY:.*]]: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3x4xf32>)
// CHECK-NEXT:    %[[DX:.*]], %[[DG:.*]], %{{.*}} = nn.layer_norm_grad %[[X]], %[[G]], %[[DY]] {axis = 1 : i64, epsilon = 9.99999997E-7 : f32}
// CHECK-NEXT:    return %[[DX]], %[[DG]]
func.func @layer_norm_without_bias(%x: tensor<2x3x4xf32>, %g: tensor<3x4xf32>) -> tensor<2x3x4xf32> attributes {nn.differentiate} {
  %y = nn.layer_norm %x, %g {axis = 1, epsilon = 1.0e-06 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Indexing and shapes
//===----------------------------------------------------------------------===//

// The table gets the rows scatter-added; the indices nothing.
// CHECK-LABEL: func.func @gather_bwd
// CHECK-SAME:    (%[[T:.*]]: tensor<10x4xf32>, %[[IDS:.*]]: tensor<2x3xi64>, %[[DY:.*]]: tensor<2x3x4xf32>) -> tensor<10x4xf32>
// CHECK-SAME:    nn.input_grads = array<i64: 0>
// CHECK-NEXT:    %[[DT:.*]] = nn.gather_grad %[[IDS]], %[[DY]] {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT:    return %[[DT]]
func.func @gather(%table: tensor<10x4xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> attributes {nn.differentiate} {
  %y = nn.gather %table, %ids {axis = 0} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_transpose_unsqueeze_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x6xf32>, %[[DY:.*]]: tensor<1x3x2x2xf32>)
// CHECK-NEXT:    %[[DU:.*]] = nn.reshape %[[DY]] : tensor<1x3x2x2xf32> -> tensor<3x2x2xf32>
// CHECK-NEXT:    %[[DT:.*]] = nn.transpose %[[DU]] {perm = array<i64: 2, 0, 1>} : tensor<3x2x2xf32> -> tensor<2x3x2xf32>
// CHECK-NEXT:    %[[DX:.*]] = nn.reshape %[[DT]] : tensor<2x3x2xf32> -> tensor<2x6xf32>
// CHECK-NEXT:    return %[[DX]]
func.func @reshape_transpose_unsqueeze(%x: tensor<2x6xf32>) -> tensor<1x3x2x2xf32> attributes {nn.differentiate} {
  %r = nn.reshape %x : tensor<2x6xf32> -> tensor<2x3x2xf32>
  %t = nn.transpose %r {perm = array<i64: 1, 2, 0>} : tensor<2x3x2xf32> -> tensor<3x2x2xf32>
  %u = nn.unsqueeze %t {axes = array<i64: 0>} : tensor<3x2x2xf32> -> tensor<1x3x2x2xf32>
  return %u : tensor<1x3x2x2xf32>
}

// A piece without a gradient contributes zeros to the concatenation.
// CHECK-LABEL: func.func @split_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x6xf32>, %[[DA:.*]]: tensor<2x1xf32>, %[[DC:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<2x2xf32>
// CHECK-NEXT:    %[[DX:.*]] = nn.concat %[[DA]], %[[Z]], %[[DC]] {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    return %[[DX]]
func.func @split(%x: tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x3xf32>) attributes {nn.differentiate} {
  %a, %b, %c = nn.split %x {axis = 1, sizes = array<i64: 1, 2, 3>} : tensor<2x6xf32> -> tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>
  return %a, %c : tensor<2x1xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @slice_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x6xf32>, %[[DY:.*]]: tensor<2x2xf32>)
// CHECK-NEXT:    %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<2x6xf32>
// CHECK-NEXT:    %[[DX:.*]] = nn.insert_slice %[[DY]] into %[[Z]] {offsets = array<i64: 0, 1>, strides = array<i64: 1, 3>} : tensor<2x2xf32> into tensor<2x6xf32>
// CHECK-NEXT:    return %[[DX]]
func.func @slice(%x: tensor<2x6xf32>) -> tensor<2x2xf32> attributes {nn.differentiate} {
  %s = nn.slice %x {offsets = array<i64: 0, 1>, sizes = array<i64: 2, 2>, strides = array<i64: 1, 3>} : tensor<2x6xf32> -> tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @concat_bwd
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x1xf32>, %[[DY:.*]]: tensor<2x4xf32>)
// CHECK-NEXT:    %[[D:.*]]:2 = nn.split %[[DY]] {axis = 1 : i64, sizes = array<i64: 3, 1>} : tensor<2x4xf32> -> tensor<2x3xf32>, tensor<2x1xf32>
// CHECK-NEXT:    return %[[D]]#0, %[[D]]#1
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x4xf32> attributes {nn.differentiate} {
  %c = nn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Reductions and slice insertion in a forward function
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce_sum_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[DY:.*]]: tensor<3xf32>)
// CHECK-NEXT:    %[[K:.*]] = nn.reshape %[[DY]] : tensor<3xf32> -> tensor<1x3xf32>
// CHECK-NEXT:    %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK-NEXT:    %[[DX:.*]] = nn.add %[[K]], %[[Z]] : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[DX]]
func.func @reduce_sum(%x: tensor<2x3xf32>) -> tensor<3xf32> attributes {nn.differentiate} {
  %y = nn.reduce_sum %x {axes = array<i64: 0>} : tensor<2x3xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// CHECK-LABEL: func.func @insert_slice_bwd
// CHECK-SAME:    (%[[S:.*]]: tensor<2x2xf32>, %[[D:.*]]: tensor<2x6xf32>, %[[DY:.*]]: tensor<2x6xf32>)
// CHECK-NEXT:    %[[DS:.*]] = nn.slice %[[DY]] {offsets = array<i64: 0, 1>, sizes = array<i64: 2, 2>, strides = array<i64: 1, 3>} : tensor<2x6xf32> -> tensor<2x2xf32>
// CHECK-NEXT:    %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<2x2xf32>
// CHECK-NEXT:    %[[DD:.*]] = nn.insert_slice %[[Z]] into %[[DY]] {offsets = array<i64: 0, 1>, strides = array<i64: 1, 3>}
// CHECK-NEXT:    return %[[DS]], %[[DD]]
func.func @insert_slice(%s: tensor<2x2xf32>, %d: tensor<2x6xf32>) -> tensor<2x6xf32> attributes {nn.differentiate} {
  %y = nn.insert_slice %s into %d {offsets = array<i64: 0, 1>, strides = array<i64: 1, 3>} : tensor<2x2xf32> into tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @cross_entropy_bwd
// CHECK-SAME:    (%[[LOGITS:.*]]: tensor<2x3x5xf32>, %[[LABELS:.*]]: tensor<2x3xi64>, %[[DL:.*]]: tensor<f32>) -> tensor<2x3x5xf32>
// CHECK-SAME:    nn.input_grads = array<i64: 0>
// CHECK-NEXT:    %[[D:.*]] = nn.cross_entropy_grad %[[LOGITS]], %[[LABELS]], %[[DL]] : (tensor<2x3x5xf32>, tensor<2x3xi64>, tensor<f32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    return %[[D]]
func.func @cross_entropy(%logits: tensor<2x3x5xf32>, %labels: tensor<2x3xi64>) -> tensor<f32> attributes {nn.differentiate} {
  %l = nn.cross_entropy %logits, %labels : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// d mean((x - t)^2) = (x - t) * 2 / N.
// CHECK-LABEL: func.func @mse_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[T:.*]]: tensor<2x3xf32>, %[[DL:.*]]: tensor<f32>)
// CHECK-NEXT:    %[[DIFF:.*]] = nn.sub %[[X]], %[[T]]
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<0.333333343> : tensor<f32>
// CHECK-NEXT:    %[[F:.*]] = nn.mul %[[DL]], %[[C]]
// CHECK-NEXT:    %[[DX:.*]] = nn.mul %[[DIFF]], %[[F]]
// CHECK-NEXT:    %[[DT:.*]] = nn.neg %[[DX]]
// CHECK-NEXT:    return %[[DX]], %[[DT]]
func.func @mse(%x: tensor<2x3xf32>, %t: tensor<2x3xf32>) -> tensor<f32> attributes {nn.differentiate} {
  %l = nn.mse %x, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// A layered MLP, parameter gradients and loss scaling
//===----------------------------------------------------------------------===//

// The layers are inlined: the backward recomputes the forward flat, then
// runs reverse mode. Parameter gradients follow the first-read order of the
// parameters. With loss-scale=0.25 the seed is scaled once, at the loss.

nn.parameter @"0.weight" : tensor<5x4xf32> init normal(2.0e-02)
nn.parameter @"0.bias" : tensor<5xf32> init zeros
nn.parameter @"2.weight" : tensor<3x5xf32> init normal(2.0e-02)

// CHECK-LABEL: func.func @mlp_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4xf32>, %[[LABELS:.*]]: tensor<2xi64>, %[[DL:.*]]: tensor<f32>)
// CHECK-SAME:    -> (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>, tensor<3x5xf32>)
// CHECK-SAME:    attributes {nn.input_grads = array<i64: 0>, nn.param_grads = [@"0.weight", @"0.bias", @"2.weight"]}
// CHECK-NOT:     nn.layer
// CHECK:         %[[W0:.*]] = nn.param @"0.weight"
// CHECK-NEXT:    %[[B0:.*]] = nn.param @"0.bias"
// CHECK-NEXT:    %[[H:.*]] = nn.linear %[[X]], %[[W0]], %[[B0]] {transpose_weight = true}
// CHECK-NEXT:    %[[A:.*]] = nn.relu %[[H]]
// CHECK-NEXT:    %[[W2:.*]] = nn.param @"2.weight"
// CHECK-NEXT:    %[[Y:.*]] = nn.linear %[[A]], %[[W2]] {transpose_weight = true}
// CHECK-NEXT:    %[[DY:.*]] = nn.cross_entropy_grad %[[Y]], %[[LABELS]], %[[DL]]
// CHECK-NEXT:    %[[DA:.*]] = nn.linear %[[DY]], %[[W2]] : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    %[[DW2:.*]] = nn.gemm %[[DY]], %[[A]] {trans_a = true} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<3x5xf32>
// CHECK:         %[[DH:.*]] = nn.where %{{.*}}, %{{.*}}, %[[DA]]
// CHECK-NEXT:    %[[DX:.*]] = nn.linear %[[DH]], %[[W0]] : (tensor<2x5xf32>, tensor<5x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[DW0:.*]] = nn.gemm %[[DH]], %[[X]] {trans_a = true} : (tensor<2x5xf32>, tensor<2x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    %[[DB0:.*]] = nn.reduce_sum %[[DH]] {axes = array<i64: 0>} : tensor<2x5xf32> -> tensor<5xf32>
// CHECK-NEXT:    return %[[DX]], %[[DW0]], %[[DB0]], %[[DW2]]

// SCALE-LABEL: func.func @mlp_bwd
// SCALE-SAME:    (%{{.*}}: tensor<2x4xf32>, %[[LABELS:.*]]: tensor<2xi64>, %[[DL:.*]]: tensor<f32>)
// SCALE-SAME:    attributes {nn.input_grads = array<i64: 0>, nn.loss_scale = 2.500000e-01 : f64, nn.param_grads = [@"0.weight", @"0.bias", @"2.weight"]}
// SCALE:         %[[Y:.*]] = nn.linear %{{.*}}, %{{.*}} {transpose_weight = true} : (tensor<2x5xf32>, tensor<3x5xf32>) -> tensor<2x3xf32>
// SCALE-NEXT:    %[[S:.*]] = nn.constant dense<2.500000e-01> : tensor<f32>
// SCALE-NEXT:    %[[SEED:.*]] = nn.mul %[[DL]], %[[S]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// SCALE-NEXT:    nn.cross_entropy_grad %[[Y]], %[[LABELS]], %[[SEED]]
// SCALE-NOT:     nn.constant dense<2.500000e-01>
// SCALE:         return
func.func @mlp(%x: tensor<2x4xf32>, %labels: tensor<2xi64>) -> tensor<f32> attributes {nn.differentiate} {
  %h = nn.layer "0" (%x) : (tensor<2x4xf32>) -> tensor<2x5xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    %w = nn.param @"0.weight" : tensor<5x4xf32>
    %b = nn.param @"0.bias" : tensor<5xf32>
    %l = nn.linear %a, %w, %b {transpose_weight = true} : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x5xf32>
    %r = nn.relu %l : tensor<2x5xf32>
    nn.yield %r : tensor<2x5xf32>
  }
  %loss = nn.layer "2" (%h, %labels) : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32> {
  ^bb0(%a: tensor<2x5xf32>, %y: tensor<2xi64>):
    %w = nn.param @"2.weight" : tensor<3x5xf32>
    %l = nn.linear %a, %w {transpose_weight = true} : (tensor<2x5xf32>, tensor<3x5xf32>) -> tensor<2x3xf32>
    %c = nn.cross_entropy %l, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
    nn.yield %c : tensor<f32>
  }
  return %loss : tensor<f32>
}

// -----

// A parameter read in two layers (a tied embedding and output head) gets one
// gradient: the contributions are added in reverse op order, the head's
// first, then the embedding's scatter-add.

nn.parameter @"emb.weight" : tensor<10x4xf32> init normal(2.0e-02)

// CHECK-LABEL: func.func @tied_embedding_bwd
// CHECK-SAME:    (%[[IDS:.*]]: tensor<2x3xi64>, %[[LABELS:.*]]: tensor<2x3xi64>, %[[DL:.*]]: tensor<f32>) -> tensor<10x4xf32>
// CHECK-SAME:    attributes {nn.input_grads = array<i64>, nn.param_grads = [@emb.weight]}
// CHECK:         %[[E:.*]] = nn.param @emb.weight
// CHECK-NOT:     nn.param
// CHECK:         nn.cross_entropy_grad
// CHECK:         %[[DHEAD:.*]] = nn.gemm %{{.*}}, %{{.*}} {trans_a = true} : (tensor<6x10xf32>, tensor<6x4xf32>) -> tensor<10x4xf32>
// CHECK:         %[[DEMB:.*]] = nn.gather_grad %[[IDS]], %{{.*}} {axis = 0 : i64}
// CHECK-NEXT:    %[[DE:.*]] = nn.add %[[DHEAD]], %[[DEMB]] : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT:    return %[[DE]]
func.func @tied_embedding(%ids: tensor<2x3xi64>, %labels: tensor<2x3xi64>) -> tensor<f32> attributes {nn.differentiate} {
  %h = nn.layer "emb" (%ids) : (tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  ^bb0(%a: tensor<2x3xi64>):
    %e = nn.param @"emb.weight" : tensor<10x4xf32>
    %g = nn.gather %e, %a {axis = 0} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %t = nn.tanh %g : tensor<2x3x4xf32>
    nn.yield %t : tensor<2x3x4xf32>
  }
  %loss = nn.layer "head" (%h, %labels) : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<f32> {
  ^bb0(%a: tensor<2x3x4xf32>, %y: tensor<2x3xi64>):
    %e = nn.param @"emb.weight" : tensor<10x4xf32>
    %logits = nn.linear %a, %e {transpose_weight = true} : (tensor<2x3x4xf32>, tensor<10x4xf32>) -> tensor<2x3x10xf32>
    %l = nn.cross_entropy %logits, %y : (tensor<2x3x10xf32>, tensor<2x3xi64>) -> tensor<f32>
    nn.yield %l : tensor<f32>
  }
  return %loss : tensor<f32>
}

// -----

// A value used three times: its gradient is the sum of the uses'
// contributions, added in reverse op order (neg, then exp, then tanh), so the
// result is the same bit for bit on every run.

// CHECK-LABEL: func.func @three_uses_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK:         %[[DNEG:.*]] = nn.neg %[[DY]]
// CHECK-NEXT:    %[[DEXP:.*]] = nn.mul %[[DY]], %{{.*}}
// CHECK-NEXT:    %[[SUM1:.*]] = nn.add %[[DNEG]], %[[DEXP]]
// CHECK:         %[[DTANH:.*]] = nn.mul %[[DY]], %{{.*}}
// CHECK-NEXT:    %[[SUM2:.*]] = nn.add %[[SUM1]], %[[DTANH]]
// CHECK-NEXT:    return %[[SUM2]]
func.func @three_uses(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %a = nn.tanh %x : tensor<4xf32>
  %b = nn.exp %x : tensor<4xf32>
  %c = nn.neg %x : tensor<4xf32>
  %ab = nn.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %abc = nn.add %ab, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %abc : tensor<4xf32>
}

// -----

// Only float results get a seed and only float inputs a gradient; a
// parameter read that no gradient reaches gets zeros. With a loss scale,
// every seed is scaled by one shared constant.

nn.parameter @scale : tensor<3xf32> init ones
nn.parameter @idle : tensor<3xf32> init zeros

// CHECK-LABEL: func.func @mixed_results_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<3xf32>, %[[IDS:.*]]: tensor<3xi64>, %[[DY:.*]]: tensor<3xf32>, %[[DS:.*]]: tensor<3xf32>)
// CHECK-SAME:    -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK-SAME:    attributes {nn.input_grads = array<i64: 0>, nn.param_grads = [@scale, @idle]}
// CHECK-NEXT:    %[[S:.*]] = nn.param @scale
// CHECK-NEXT:    %[[DX:.*]] = nn.mul %[[DY]], %[[S]]
// CHECK-NEXT:    %[[DSY:.*]] = nn.mul %[[DY]], %[[X]]
// CHECK-NEXT:    %[[DSCALE:.*]] = nn.add %[[DS]], %[[DSY]]
// CHECK-NEXT:    %[[ZERO:.*]] = nn.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK-NEXT:    return %[[DX]], %[[DSCALE]], %[[ZERO]]

// SCALE-LABEL: func.func @mixed_results_bwd
// SCALE-SAME:    (%{{.*}}: tensor<3xf32>, %{{.*}}: tensor<3xi64>, %[[DY:.*]]: tensor<3xf32>, %[[DS:.*]]: tensor<3xf32>)
// SCALE:         %[[C:.*]] = nn.constant dense<2.500000e-01> : tensor<f32>
// SCALE-NEXT:    nn.mul %[[DY]], %[[C]]
// SCALE-NEXT:    nn.mul %[[DS]], %[[C]]
func.func @mixed_results(%x: tensor<3xf32>, %ids: tensor<3xi64>) -> (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) attributes {nn.differentiate} {
  %s = nn.param @scale : tensor<3xf32>
  %i = nn.param @idle : tensor<3xf32>
  %one = nn.constant dense<1> : tensor<i64>
  %m = nn.equal %ids, %one : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %y = nn.mul %x, %s : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %m, %y, %s : tensor<3xi1>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Functions without the marker are left alone.

// CHECK-LABEL: func.func @not_marked
// CHECK-NOT:   func.func @not_marked_bwd
func.func @not_marked(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

func.func @no_vjp(%y: tensor<4xf32>, %dy: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  // expected-error @+1 {{'nn.softmax_grad' op is on the gradient path but has no VJP}}
  %dx = nn.softmax_grad %y, %dy {axis = 0} : tensor<4xf32>
  return %dx : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op cannot create backward function 'taken_bwd': the symbol exists}}
func.func @taken(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  return %x : tensor<4xf32>
}
func.func @taken_bwd(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op expected a body of one block to differentiate}}
func.func private @external(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate}
