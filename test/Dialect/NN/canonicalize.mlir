// RUN: gpipe-opt %s --canonicalize -split-input-file | FileCheck %s

// Fusion patterns (gemm/matmul/bias add -> nn.linear, erf GELU -> nn.gelu),
// the cases they must leave alone, and the folders.

//===----------------------------------------------------------------------===//
// nn.gemm -> nn.linear
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @gemm_trans_b_bias_to_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK:         %[[Y:.*]] = nn.linear %[[X]], %[[W]], %[[B]] {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NOT:     nn.gemm
// CHECK:         return %[[Y]]
func.func @gemm_trans_b_bias_to_linear(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @gemm_no_trans_bias_to_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK:         %[[Y:.*]] = nn.linear %[[X]], %[[W]], %[[B]] : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NOT:     nn.gemm
// CHECK:         return %[[Y]]
func.func @gemm_no_trans_bias_to_linear(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @gemm_trans_b_no_c_to_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>)
// CHECK:         %[[Y:.*]] = nn.linear %[[X]], %[[W]] {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
// CHECK-NOT:     nn.gemm
// CHECK:         return %[[Y]]
func.func @gemm_trans_b_no_c_to_linear(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Without an addend beta is irrelevant.
// CHECK-LABEL: func.func @gemm_no_c_beta_ignored_to_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>)
// CHECK:         %[[Y:.*]] = nn.linear %[[X]], %[[W]] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK:         return %[[Y]]
func.func @gemm_no_c_beta_ignored_to_linear(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w {beta = 0.0 : f32} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @negative_gemm_alpha_stays_gemm
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK:         %[[Y:.*]] = nn.gemm %[[X]], %[[W]], %[[B]] {alpha = 5.000000e-01 : f32, trans_b = true}
// CHECK-NOT:     nn.linear
// CHECK:         return %[[Y]]
func.func @negative_gemm_alpha_stays_gemm(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w, %b {alpha = 0.5 : f32, trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @negative_gemm_beta_with_c_stays_gemm
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK:         %[[Y:.*]] = nn.gemm %[[X]], %[[W]], %[[B]] {beta = 2.000000e+00 : f32, trans_b = true}
// CHECK-NOT:     nn.linear
// CHECK:         return %[[Y]]
func.func @negative_gemm_beta_with_c_stays_gemm(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w, %b {beta = 2.0 : f32, trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @negative_gemm_trans_a_stays_gemm
// CHECK-SAME:    (%[[X:.*]]: tensor<16x8xf32>, %[[W:.*]]: tensor<16x32xf32>)
// CHECK:         %[[Y:.*]] = nn.gemm %[[X]], %[[W]] {trans_a = true}
// CHECK-NOT:     nn.linear
// CHECK:         return %[[Y]]
func.func @negative_gemm_trans_a_stays_gemm(%x: tensor<16x8xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w {trans_a = true} : (tensor<16x8xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @negative_gemm_2d_c_stays_gemm
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[C:.*]]: tensor<8x32xf32>, %[[R:.*]]: tensor<1x32xf32>)
// CHECK:         %[[Y:.*]] = nn.gemm %[[X]], %[[W]], %[[C]] :
// CHECK:         %[[Z:.*]] = nn.gemm %[[X]], %[[W]], %[[R]] :
// CHECK-NOT:     nn.linear
// CHECK:         return %[[Y]], %[[Z]]
func.func @negative_gemm_2d_c_stays_gemm(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %c: tensor<8x32xf32>, %r: tensor<1x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %y = nn.gemm %x, %w, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %z = nn.gemm %x, %w, %r : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<1x32xf32>) -> tensor<8x32xf32>
  return %y, %z : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// A scalar-like [1] addend broadcasts but is not a per-feature bias.
// CHECK-LABEL: func.func @negative_gemm_scalar_c_stays_gemm
// CHECK:         nn.gemm
// CHECK-NOT:     nn.linear
func.func @negative_gemm_scalar_c_stays_gemm(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %c: tensor<1xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<1xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// nn.matmul -> nn.linear
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul_2d_rhs_to_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x32xf32>, %[[W:.*]]: tensor<32x96xf32>)
// CHECK:         %[[Y:.*]] = nn.linear %[[X]], %[[W]] : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
// CHECK-NOT:     nn.matmul
// CHECK:         return %[[Y]]
func.func @matmul_2d_rhs_to_linear(%x: tensor<2x16x32xf32>, %w: tensor<32x96xf32>) -> tensor<2x16x96xf32> {
  %y = nn.matmul %x, %w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
  return %y : tensor<2x16x96xf32>
}

// -----

// CHECK-LABEL: func.func @negative_matmul_batched_rhs_stays_matmul
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x4x8x16xf32>)
// CHECK:         %[[S:.*]] = nn.matmul %[[Q]], %[[K]] : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
// CHECK-NOT:     nn.linear
// CHECK:         return %[[S]]
func.func @negative_matmul_batched_rhs_stays_matmul(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32> {
  %s = nn.matmul %q, %k : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  return %s : tensor<2x4x16x16xf32>
}

// -----

// A transposed 2-D weight is a linear layer reading it transposed; a
// transposed left operand is not a linear layer.
// CHECK-LABEL: func.func @matmul_2d_transposed_rhs_to_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x32xf32>, %[[W:.*]]: tensor<96x32xf32>, %[[X2:.*]]: tensor<32x16xf32>, %[[W2:.*]]: tensor<32x96xf32>)
// CHECK:         %[[Y:.*]] = nn.linear %[[X]], %[[W]] {transpose_weight = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>) -> tensor<2x16x96xf32>
// CHECK:         %[[Z:.*]] = nn.matmul %[[X2]], %[[W2]] {trans_lhs = true} : (tensor<32x16xf32>, tensor<32x96xf32>) -> tensor<16x96xf32>
// CHECK:         return %[[Y]], %[[Z]]
func.func @matmul_2d_transposed_rhs_to_linear(%x: tensor<2x16x32xf32>, %w: tensor<96x32xf32>, %x2: tensor<32x16xf32>, %w2: tensor<32x96xf32>) -> (tensor<2x16x96xf32>, tensor<16x96xf32>) {
  %y = nn.matmul %x, %w {trans_rhs = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>) -> tensor<2x16x96xf32>
  %z = nn.matmul %x2, %w2 {trans_lhs = true} : (tensor<32x16xf32>, tensor<32x96xf32>) -> tensor<16x96xf32>
  return %y, %z : tensor<2x16x96xf32>, tensor<16x96xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Transposes of the last two dims fold into nn.matmul's flags
//===----------------------------------------------------------------------===//

// A swap of the last two dims vanishes into the flag (either operand, a
// flag already set flips back).
// CHECK-LABEL: func.func @matmul_folds_last_two_transposes
// CHECK-SAME:    (%[[P:.*]]: tensor<2x4x16x16xf32>, %[[DO:.*]]: tensor<2x4x16x8xf32>, %[[V:.*]]: tensor<2x4x8x16xf32>)
// CHECK-NOT:     nn.transpose
// CHECK:         %[[A:.*]] = nn.matmul %[[P]], %[[DO]] {trans_lhs = true} : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
// CHECK:         %[[B:.*]] = nn.matmul %[[DO]], %[[V]] : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
// CHECK:         return %[[A]], %[[B]]
func.func @matmul_folds_last_two_transposes(%p: tensor<2x4x16x16xf32>, %do: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x16xf32>) {
  %pt = nn.transpose %p {perm = array<i64: 0, 1, 3, 2>} : tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
  %a = nn.matmul %pt, %do : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  %vt = nn.transpose %v {perm = array<i64: 0, 1, 3, 2>} : tensor<2x4x8x16xf32> -> tensor<2x4x16x8xf32>
  %b = nn.matmul %do, %vt {trans_rhs = true} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  return %a, %b : tensor<2x4x16x8xf32>, tensor<2x4x16x16xf32>
}

// -----

// The keys' [B, T, H, D] -> [B, H, D, T]: the transpose left moves whole
// rows of D ([B, H, T, D]) and the matmul reads it transposed.
// CHECK-LABEL: func.func @matmul_keys_transpose_keeps_rows
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x16x4x8xf32>)
// CHECK:         %[[KH:.*]] = nn.transpose %[[K]] {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
// CHECK:         %[[S:.*]] = nn.matmul %[[Q]], %[[KH]] {trans_rhs = true} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
// CHECK:         return %[[S]]
func.func @matmul_keys_transpose_keeps_rows(%q: tensor<2x4x16x8xf32>, %k: tensor<2x16x4x8xf32>) -> tensor<2x4x16x16xf32> {
  %kt = nn.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<2x16x4x8xf32> -> tensor<2x4x8x16xf32>
  %s = nn.matmul %q, %kt : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  return %s : tensor<2x4x16x16xf32>
}

// -----

// Left alone: a transpose that would still scatter elements after the swap,
// and one whose result is used elsewhere too.
// CHECK-LABEL: func.func @negative_matmul_transpose_not_folded
// CHECK:         nn.transpose %{{.*}} {perm = array<i64: 0, 3, 1, 2>}
// CHECK:         nn.matmul %{{.*}}, %{{.*}} : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>)
// CHECK:         %[[KT:.*]] = nn.transpose %{{.*}} {perm = array<i64: 0, 2, 3, 1>}
// CHECK:         nn.matmul %{{.*}}, %[[KT]] : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>)
// CHECK-NOT:     trans_
func.func @negative_matmul_transpose_not_folded(%q: tensor<2x4x16x8xf32>, %k: tensor<2x16x4x8xf32>, %x: tensor<2x8x16x4xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x8x16xf32>) {
  %xt = nn.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<2x8x16x4xf32> -> tensor<2x4x8x16xf32>
  %a = nn.matmul %q, %xt : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %kt = nn.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<2x16x4x8xf32> -> tensor<2x4x8x16xf32>
  %b = nn.matmul %q, %kt : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  return %a, %b, %kt : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Bias add -> nn.linear
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @add_bias_linear_to_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x32xf32>, %[[W:.*]]: tensor<32x96xf32>, %[[B:.*]]: tensor<96xf32>)
// CHECK:         %[[Y:.*]] = nn.linear %[[X]], %[[W]], %[[B]] : (tensor<2x16x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
// CHECK-NOT:     nn.add
// CHECK-NOT:     nn.matmul
// CHECK:         return %[[Y]]
func.func @add_bias_linear_to_linear(%x: tensor<2x16x32xf32>, %w: tensor<32x96xf32>, %b: tensor<96xf32>) -> tensor<2x16x96xf32> {
  %m = nn.matmul %x, %w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
  %y = nn.add %b, %m : (tensor<96xf32>, tensor<2x16x96xf32>) -> tensor<2x16x96xf32>
  return %y : tensor<2x16x96xf32>
}

// -----

// CHECK-LABEL: func.func @add_linear_bias_to_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK:         %[[Y:.*]] = nn.linear %[[X]], %[[W]], %[[B]] {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NOT:     nn.add
// CHECK:         return %[[Y]]
func.func @add_linear_bias_to_linear(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %l = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %y = nn.add %l, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// A [8, 32] addend is a residual, not a bias.
// CHECK-LABEL: func.func @negative_add_full_tensor_stays_add
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[R:.*]]: tensor<8x32xf32>)
// CHECK:         %[[L:.*]] = nn.linear %[[X]], %[[W]] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK:         %[[Y:.*]] = nn.add %[[L]], %[[R]]
// CHECK:         return %[[Y]]
func.func @negative_add_full_tensor_stays_add(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %r: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %l = nn.linear %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %y = nn.add %l, %r : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// A scalar addend broadcasts over every feature but is not a bias [out].
// CHECK-LABEL: func.func @negative_add_scalar_stays_add
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[S:.*]]: tensor<f32>)
// CHECK:         %[[L:.*]] = nn.linear %[[X]], %[[W]]
// CHECK:         %[[Y:.*]] = nn.add %[[L]], %[[S]] : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
// CHECK:         return %[[Y]]
func.func @negative_add_scalar_stays_add(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %s: tensor<f32>) -> tensor<8x32xf32> {
  %l = nn.linear %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %y = nn.add %l, %s : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// The bias-less linear has a second use: fusing would compute it twice.
// CHECK-LABEL: func.func @negative_add_bias_linear_two_uses
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK:         %[[L:.*]] = nn.linear %[[X]], %[[W]] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK:         %[[Y:.*]] = nn.add %[[L]], %[[B]]
// CHECK:         return %[[Y]], %[[L]]
func.func @negative_add_bias_linear_two_uses(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %l = nn.linear %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %y = nn.add %l, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y, %l : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// A linear that already has a bias keeps the second add.
// CHECK-LABEL: func.func @negative_add_bias_to_biased_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK:         %[[L:.*]] = nn.linear %[[X]], %[[W]], %[[B]]
// CHECK:         %[[Y:.*]] = nn.add %[[L]], %[[B]]
// CHECK:         return %[[Y]]
func.func @negative_add_bias_to_biased_linear(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %l = nn.linear %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y = nn.add %l, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Erf GELU -> nn.gelu
//===----------------------------------------------------------------------===//

// The order torch.onnx writes: mul(mul(x, add(erf(div(x, sqrt2)), 1)), 0.5).
// CHECK-LABEL: func.func @gelu_exporter_order
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x64xf32>)
// CHECK-NEXT:    %[[G:.*]] = nn.gelu %[[X]] : tensor<2x16x64xf32>
// CHECK-NEXT:    return %[[G]]
func.func @gelu_exporter_order(%x: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %x, %sqrt2 : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %e = nn.erf %d : tensor<2x16x64xf32>
  %a = nn.add %e, %one : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %m = nn.mul %x, %a : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %g = nn.mul %m, %half : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  return %g : tensor<2x16x64xf32>
}

// -----

// mul(mul(x, 0.5), add(erf(x / sqrt2), 1)).
// CHECK-LABEL: func.func @gelu_half_first
// CHECK-SAME:    (%[[X:.*]]: tensor<8x32xf32>)
// CHECK-NEXT:    %[[G:.*]] = nn.gelu %[[X]] : tensor<8x32xf32>
// CHECK-NEXT:    return %[[G]]
func.func @gelu_half_first(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %h = nn.mul %x, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %d = nn.div %x, %sqrt2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %g = nn.mul %h, %a : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}

// -----

// x * (1/sqrt2) in place of x / sqrt2.
// CHECK-LABEL: func.func @gelu_mul_inv_sqrt2
// CHECK-SAME:    (%[[X:.*]]: tensor<8x32xf32>)
// CHECK-NEXT:    %[[G:.*]] = nn.gelu %[[X]] : tensor<8x32xf32>
// CHECK-NEXT:    return %[[G]]
func.func @gelu_mul_inv_sqrt2(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %rsqrt2 = nn.constant dense<0.707106769> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.mul %x, %rsqrt2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %m = nn.mul %x, %a : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = nn.mul %m, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}

// -----

// Every commutative operand swapped: 0.5 * ((1 + erf((1/sqrt2) * x)) * x).
// CHECK-LABEL: func.func @gelu_commuted_operands
// CHECK-SAME:    (%[[X:.*]]: tensor<8x32xf32>)
// CHECK-NEXT:    %[[G:.*]] = nn.gelu %[[X]] : tensor<8x32xf32>
// CHECK-NEXT:    return %[[G]]
func.func @gelu_commuted_operands(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %rsqrt2 = nn.constant dense<0.707106769> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.mul %rsqrt2, %x : (tensor<f32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %one, %e : (tensor<f32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = nn.mul %a, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = nn.mul %half, %m : (tensor<f32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}

// -----

// (0.5 * x) * (1 + erf(x / sqrt2)) with the half on the left and the erf term
// operands swapped; the GELU of an f16 tensor.
// CHECK-LABEL: func.func @gelu_half_first_commuted_f16
// CHECK-SAME:    (%[[X:.*]]: tensor<8x32xf16>)
// CHECK-NEXT:    %[[G:.*]] = nn.gelu %[[X]] : tensor<8x32xf16>
// CHECK-NEXT:    return %[[G]]
func.func @gelu_half_first_commuted_f16(%x: tensor<8x32xf16>) -> tensor<8x32xf16> {
  %sqrt2 = nn.constant dense<1.414> : tensor<f16>
  %one = nn.constant dense<1.0> : tensor<f16>
  %half = nn.constant dense<0.5> : tensor<f16>
  %h = nn.mul %half, %x : (tensor<f16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  %d = nn.div %x, %sqrt2 : (tensor<8x32xf16>, tensor<f16>) -> tensor<8x32xf16>
  %e = nn.erf %d : tensor<8x32xf16>
  %a = nn.add %one, %e : (tensor<f16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  %g = nn.mul %a, %h : (tensor<8x32xf16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  return %g : tensor<8x32xf16>
}

// -----

// Near miss: 0.6 instead of 0.5.
// CHECK-LABEL: func.func @negative_gelu_wrong_half
// CHECK-NOT:     nn.gelu
// CHECK:         nn.erf
// CHECK:         nn.mul
// CHECK:         nn.mul
// CHECK-NOT:     nn.gelu
func.func @negative_gelu_wrong_half(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %c = nn.constant dense<0.6> : tensor<f32>
  %d = nn.div %x, %sqrt2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %m = nn.mul %x, %a : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = nn.mul %m, %c : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}

// -----

// Near miss: erf of y / sqrt2 multiplied by x.
// CHECK-LABEL: func.func @negative_gelu_erf_of_other_value
// CHECK-NOT:     nn.gelu
// CHECK:         nn.erf
// CHECK-NOT:     nn.gelu
func.func @negative_gelu_erf_of_other_value(%x: tensor<8x32xf32>, %y: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %y, %sqrt2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %m = nn.mul %x, %a : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = nn.mul %m, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}

// -----

// Near miss: x / 2 instead of x / sqrt2 (the 0.5 * x + ... form stays too).
// CHECK-LABEL: func.func @negative_gelu_wrong_divisor
// CHECK-NOT:     nn.gelu
// CHECK:         nn.div
// CHECK:         nn.erf
// CHECK-NOT:     nn.gelu
func.func @negative_gelu_wrong_divisor(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %two = nn.constant dense<2.0> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %x, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %m = nn.mul %x, %a : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = nn.mul %m, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}

// -----

// A broadcasting 0.5 that widens the result is not an elementwise GELU of x.
// CHECK-LABEL: func.func @negative_gelu_broadcast_widens
// CHECK-NOT:     nn.gelu
// CHECK:         nn.erf
// CHECK-NOT:     nn.gelu
func.func @negative_gelu_broadcast_widens(%x: tensor<32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<4x32xf32>
  %d = nn.div %x, %sqrt2 : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
  %e = nn.erf %d : tensor<32xf32>
  %a = nn.add %e, %one : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
  %m = nn.mul %x, %a : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %g = nn.mul %m, %half : (tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %g : tensor<4x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @fold_reshape_same_type
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    return %[[X]]
func.func @fold_reshape_same_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = nn.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @fold_reshape_of_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %[[X]] : tensor<4x8xf32> -> tensor<2x2x8xf32>
// CHECK-NEXT:    return %[[R]]
func.func @fold_reshape_of_reshape(%x: tensor<4x8xf32>) -> tensor<2x2x8xf32> {
  %a = nn.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %b = nn.reshape %a : tensor<32xf32> -> tensor<2x2x8xf32>
  return %b : tensor<2x2x8xf32>
}

// -----

// A reshape chain back to the input type disappears.
// CHECK-LABEL: func.func @fold_reshape_round_trip
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    return %[[X]]
func.func @fold_reshape_round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = nn.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %b = nn.reshape %a : tensor<32xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @fold_reshape_of_constant
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    return %[[C]]
func.func @fold_reshape_of_constant() -> tensor<2x2xf32> {
  %c = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r = nn.reshape %c : tensor<4xf32> -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @fold_reshape_of_splat_constant
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<0.000000e+00> : tensor<2x8xf32>
// CHECK-NEXT:    return %[[C]]
func.func @fold_reshape_of_splat_constant() -> tensor<2x8xf32> {
  %c = nn.constant dense<0.0> : tensor<16xf32>
  %r = nn.reshape %c : tensor<16xf32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @fold_transpose_identity
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    return %[[X]]
func.func @fold_transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %t = nn.transpose %x {perm = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %t : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @negative_transpose_not_identity
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[T:.*]] = nn.transpose %[[X]] {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    return %[[T]]
func.func @negative_transpose_not_identity(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @fold_cast_same_type
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    return %[[X]]
func.func @fold_cast_same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = nn.cast %x : tensor<4xf32> -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @negative_cast_other_type
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[C:.*]] = nn.cast %[[X]] : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT:    return %[[C]]
func.func @negative_cast_other_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  %c = nn.cast %x : tensor<4xf32> -> tensor<4xf16>
  return %c : tensor<4xf16>
}
