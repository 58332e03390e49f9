// RUN: gpipe-opt %s -split-input-file | gpipe-opt | FileCheck %s
// RUN: gpipe-opt %s -split-input-file --verify-roundtrip

// Round-trip of every nn op in its custom assembly form.

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

// CHECK-LABEL: nn.parameter @w.inline : tensor<2x2xf32> = dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-LABEL: func.func @parameter_inline_value
// CHECK:         %[[W:.*]] = nn.param @w.inline : tensor<2x2xf32>
// CHECK:         return %[[W]]
nn.parameter @"w.inline" : tensor<2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
func.func @parameter_inline_value() -> tensor<2x2xf32> {
  %w = nn.param @"w.inline" : tensor<2x2xf32>
  return %w : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: nn.parameter @"0.weight" : tensor<2xf32> = dense_resource<w_blob> : tensor<2xf32>
// CHECK-LABEL: func.func @parameter_dense_resource
// CHECK:         %[[W:.*]] = nn.param @"0.weight" : tensor<2xf32>
// CHECK:         return %[[W]]
nn.parameter @"0.weight" : tensor<2xf32> = dense_resource<w_blob> : tensor<2xf32>
func.func @parameter_dense_resource() -> tensor<2xf32> {
  %w = nn.param @"0.weight" : tensor<2xf32>
  return %w : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w_blob: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// CHECK-LABEL: nn.parameter @zeros : tensor<4xf32> init zeros
// CHECK-NEXT:  nn.parameter @ones : tensor<4xbf16> init ones
// CHECK-NEXT:  nn.parameter @normal : tensor<4x4xf16> init normal(2.000000e-02)
// CHECK-NEXT:  nn.parameter @uniform : tensor<4x4xf64> init uniform(1.000000e-01)
// CHECK-LABEL: func.func @parameter_init_rules
// CHECK:         nn.param @zeros : tensor<4xf32>
// CHECK:         nn.param @ones : tensor<4xbf16>
// CHECK:         nn.param @normal : tensor<4x4xf16>
// CHECK:         nn.param @uniform : tensor<4x4xf64>
nn.parameter @zeros : tensor<4xf32> init zeros
nn.parameter @ones : tensor<4xbf16> init ones
nn.parameter @normal : tensor<4x4xf16> init normal(2.0e-02)
nn.parameter @uniform : tensor<4x4xf64> init uniform(0.1)
func.func @parameter_init_rules() -> (tensor<4xf32>, tensor<4xbf16>, tensor<4x4xf16>, tensor<4x4xf64>) {
  %z = nn.param @zeros : tensor<4xf32>
  %o = nn.param @ones : tensor<4xbf16>
  %n = nn.param @normal : tensor<4x4xf16>
  %u = nn.param @uniform : tensor<4x4xf64>
  return %z, %o, %n, %u : tensor<4xf32>, tensor<4xbf16>, tensor<4x4xf16>, tensor<4x4xf64>
}

// -----

// CHECK-LABEL: func.func @constant
// CHECK:         %[[F:.*]] = nn.constant dense<5.000000e-01> : tensor<f32>
// CHECK:         %[[I:.*]] = nn.constant dense<[1, 2]> : tensor<2xi64>
// CHECK:         %[[B:.*]] = nn.constant dense<[true, false]> : tensor<2xi1>
// CHECK:         return %[[F]], %[[I]], %[[B]]
func.func @constant() -> (tensor<f32>, tensor<2xi64>, tensor<2xi1>) {
  %f = nn.constant dense<0.5> : tensor<f32>
  %i = nn.constant dense<[1, 2]> : tensor<2xi64>
  %b = nn.constant dense<[true, false]> : tensor<2xi1>
  return %f, %i, %b : tensor<f32>, tensor<2xi64>, tensor<2xi1>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary_broadcasting
// CHECK-SAME:    (%[[A:.*]]: tensor<4x1x8xf32>, %[[B:.*]]: tensor<3x1xf32>, %[[S:.*]]: tensor<f32>)
// CHECK:         %[[ADD:.*]] = nn.add %[[A]], %[[B]] : (tensor<4x1x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
// CHECK:         %[[SUB:.*]] = nn.sub %[[ADD]], %[[S]] : (tensor<4x3x8xf32>, tensor<f32>) -> tensor<4x3x8xf32>
// CHECK:         %[[MUL:.*]] = nn.mul %[[S]], %[[SUB]] : (tensor<f32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
// CHECK:         %[[DIV:.*]] = nn.div %[[MUL]], %[[A]] : (tensor<4x3x8xf32>, tensor<4x1x8xf32>) -> tensor<4x3x8xf32>
// CHECK:         %[[POW:.*]] = nn.pow %[[DIV]], %[[S]] : (tensor<4x3x8xf32>, tensor<f32>) -> tensor<4x3x8xf32>
// CHECK:         return %[[POW]]
func.func @binary_broadcasting(%a: tensor<4x1x8xf32>, %b: tensor<3x1xf32>, %s: tensor<f32>) -> tensor<4x3x8xf32> {
  %add = nn.add %a, %b : (tensor<4x1x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
  %sub = nn.sub %add, %s : (tensor<4x3x8xf32>, tensor<f32>) -> tensor<4x3x8xf32>
  %mul = nn.mul %s, %sub : (tensor<f32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  %div = nn.div %mul, %a : (tensor<4x3x8xf32>, tensor<4x1x8xf32>) -> tensor<4x3x8xf32>
  %pow = nn.pow %div, %s : (tensor<4x3x8xf32>, tensor<f32>) -> tensor<4x3x8xf32>
  return %pow : tensor<4x3x8xf32>
}

// -----

// CHECK-LABEL: func.func @binary_integer
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xi64>, %[[B:.*]]: tensor<3xi64>)
// CHECK:         %[[ADD:.*]] = nn.add %[[A]], %[[B]] : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK:         return %[[ADD]]
func.func @binary_integer(%a: tensor<2x3xi64>, %b: tensor<3xi64>) -> tensor<2x3xi64> {
  %add = nn.add %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  return %add : tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @remainders_and_rounding
// CHECK:         nn.remainder %{{.*}}, %{{.*}} : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK:         nn.fmod %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK:         nn.floor %{{.*}} : tensor<4xf32>
// CHECK:         nn.ceil %{{.*}} : tensor<4xf32>
// CHECK:         nn.round %{{.*}} : tensor<4xf32>
func.func @remainders_and_rounding(%a: tensor<2x3xi64>, %b: tensor<3xi64>, %x: tensor<4xf32>, %s: tensor<f32>) -> (tensor<2x3xi64>, tensor<4xf32>) {
  %r = nn.remainder %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %m = nn.fmod %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %f = nn.floor %m : tensor<4xf32>
  %c = nn.ceil %f : tensor<4xf32>
  %o = nn.round %c : tensor<4xf32>
  return %r, %o : tensor<2x3xi64>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @equal_where
// CHECK-SAME:    (%[[A:.*]]: tensor<4x4xi64>, %[[B:.*]]: tensor<i64>, %[[X:.*]]: tensor<2x4x4xf32>, %[[Y:.*]]: tensor<f32>)
// CHECK:         %[[M:.*]] = nn.equal %[[A]], %[[B]] : (tensor<4x4xi64>, tensor<i64>) -> tensor<4x4xi1>
// CHECK:         %[[R:.*]] = nn.where %[[M]], %[[X]], %[[Y]] : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
// CHECK:         return %[[R]]
func.func @equal_where(%a: tensor<4x4xi64>, %b: tensor<i64>, %x: tensor<2x4x4xf32>, %y: tensor<f32>) -> tensor<2x4x4xf32> {
  %m = nn.equal %a, %b : (tensor<4x4xi64>, tensor<i64>) -> tensor<4x4xi1>
  %r = nn.where %m, %x, %y : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  return %r : tensor<2x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @unary
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[M:.*]]: tensor<4x8xi1>)
// CHECK:         %[[NEG:.*]] = nn.neg %[[X]] : tensor<4x8xf32>
// CHECK:         %[[REC:.*]] = nn.reciprocal %[[NEG]] : tensor<4x8xf32>
// CHECK:         %[[SQRT:.*]] = nn.sqrt %[[REC]] : tensor<4x8xf32>
// CHECK:         %[[EXP:.*]] = nn.exp %[[SQRT]] : tensor<4x8xf32>
// CHECK:         %[[ERF:.*]] = nn.erf %[[EXP]] : tensor<4x8xf32>
// CHECK:         %[[TANH:.*]] = nn.tanh %[[ERF]] : tensor<4x8xf32>
// CHECK:         %[[SIG:.*]] = nn.sigmoid %[[TANH]] : tensor<4x8xf32>
// CHECK:         %[[RELU:.*]] = nn.relu %[[SIG]] : tensor<4x8xf32>
// CHECK:         %[[GELU:.*]] = nn.gelu %[[RELU]] : tensor<4x8xf32>
// CHECK:         %[[NOT:.*]] = nn.not %[[M]] : tensor<4x8xi1>
// CHECK:         return %[[GELU]], %[[NOT]]
func.func @unary(%x: tensor<4x8xf32>, %m: tensor<4x8xi1>) -> (tensor<4x8xf32>, tensor<4x8xi1>) {
  %neg = nn.neg %x : tensor<4x8xf32>
  %rec = nn.reciprocal %neg : tensor<4x8xf32>
  %sqrt = nn.sqrt %rec : tensor<4x8xf32>
  %exp = nn.exp %sqrt : tensor<4x8xf32>
  %erf = nn.erf %exp : tensor<4x8xf32>
  %tanh = nn.tanh %erf : tensor<4x8xf32>
  %sig = nn.sigmoid %tanh : tensor<4x8xf32>
  %relu = nn.relu %sig : tensor<4x8xf32>
  %gelu = nn.gelu %relu : tensor<4x8xf32>
  %not = nn.not %m : tensor<4x8xi1>
  return %gelu, %not : tensor<4x8xf32>, tensor<4x8xi1>
}

// -----

// CHECK-LABEL: func.func @unary_low_precision
// CHECK-SAME:    (%[[H:.*]]: tensor<8xf16>, %[[B:.*]]: tensor<8xbf16>, %[[D:.*]]: tensor<8xf64>)
// CHECK:         nn.gelu %[[H]] : tensor<8xf16>
// CHECK:         nn.relu %[[B]] : tensor<8xbf16>
// CHECK:         nn.tanh %[[D]] : tensor<8xf64>
func.func @unary_low_precision(%h: tensor<8xf16>, %b: tensor<8xbf16>, %d: tensor<8xf64>) -> (tensor<8xf16>, tensor<8xbf16>, tensor<8xf64>) {
  %0 = nn.gelu %h : tensor<8xf16>
  %1 = nn.relu %b : tensor<8xbf16>
  %2 = nn.tanh %d : tensor<8xf64>
  return %0, %1, %2 : tensor<8xf16>, tensor<8xbf16>, tensor<8xf64>
}

// -----

// CHECK-LABEL: func.func @log
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK:         %[[L:.*]] = nn.log %[[X]] : tensor<4x8xf32>
// CHECK:         return %[[L]]
func.func @log(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %l = nn.log %x : tensor<4x8xf32>
  return %l : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @cast
// CHECK-SAME:    (%[[M:.*]]: tensor<4x4xi1>, %[[X:.*]]: tensor<4x4xf32>)
// CHECK:         %[[F:.*]] = nn.cast %[[M]] : tensor<4x4xi1> -> tensor<4x4xf32>
// CHECK:         %[[I:.*]] = nn.cast %[[X]] : tensor<4x4xf32> -> tensor<4x4xi64>
// CHECK:         %[[H:.*]] = nn.cast %[[X]] : tensor<4x4xf32> -> tensor<4x4xf16>
// CHECK:         return %[[F]], %[[I]], %[[H]]
func.func @cast(%m: tensor<4x4xi1>, %x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xi64>, tensor<4x4xf16>) {
  %f = nn.cast %m : tensor<4x4xi1> -> tensor<4x4xf32>
  %i = nn.cast %x : tensor<4x4xf32> -> tensor<4x4xi64>
  %h = nn.cast %x : tensor<4x4xf32> -> tensor<4x4xf16>
  return %f, %i, %h : tensor<4x4xf32>, tensor<4x4xi64>, tensor<4x4xf16>
}

// -----

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul_2d
// CHECK-SAME:    (%[[A:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16x32xf32>)
// CHECK:         %[[R:.*]] = nn.matmul %[[A]], %[[B]] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK:         return %[[R]]
func.func @matmul_2d(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %r = nn.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_batched_broadcast
// CHECK-SAME:    (%[[A:.*]]: tensor<2x1x16x8xf32>, %[[B:.*]]: tensor<4x8x16xf32>, %[[W:.*]]: tensor<8x32xf32>)
// CHECK:         %[[R:.*]] = nn.matmul %[[A]], %[[B]] : (tensor<2x1x16x8xf32>, tensor<4x8x16xf32>) -> tensor<2x4x16x16xf32>
// CHECK:         %[[L:.*]] = nn.matmul %[[A]], %[[W]] : (tensor<2x1x16x8xf32>, tensor<8x32xf32>) -> tensor<2x1x16x32xf32>
// CHECK:         return %[[R]], %[[L]]
func.func @matmul_batched_broadcast(%a: tensor<2x1x16x8xf32>, %b: tensor<4x8x16xf32>, %w: tensor<8x32xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x1x16x32xf32>) {
  %r = nn.matmul %a, %b : (tensor<2x1x16x8xf32>, tensor<4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %l = nn.matmul %a, %w : (tensor<2x1x16x8xf32>, tensor<8x32xf32>) -> tensor<2x1x16x32xf32>
  return %r, %l : tensor<2x4x16x16xf32>, tensor<2x1x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @gemm
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[XT:.*]]: tensor<16x8xf32>, %[[W:.*]]: tensor<32x16xf32>, %[[WT:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>, %[[C:.*]]: tensor<8x32xf32>)
// CHECK:         %[[G0:.*]] = nn.gemm %[[X]], %[[WT]] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK:         %[[G1:.*]] = nn.gemm %[[X]], %[[W]], %[[B]] {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK:         %[[G2:.*]] = nn.gemm %[[XT]], %[[WT]], %[[C]] {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a = true} : (tensor<16x8xf32>, tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK:         %[[G3:.*]] = nn.gemm %[[XT]], %[[W]] {trans_a = true, trans_b = true} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
// CHECK:         return %[[G0]], %[[G1]], %[[G2]], %[[G3]]
func.func @gemm(%x: tensor<8x16xf32>, %xt: tensor<16x8xf32>, %w: tensor<32x16xf32>, %wt: tensor<16x32xf32>, %b: tensor<32xf32>, %c: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %g0 = nn.gemm %x, %wt : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %g1 = nn.gemm %x, %w, %b {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %g2 = nn.gemm %xt, %wt, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = true} : (tensor<16x8xf32>, tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g3 = nn.gemm %xt, %w {trans_a = true, trans_b = true} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return %g0, %g1, %g2, %g3 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x32xf32>, %[[W:.*]]: tensor<32x96xf32>, %[[WT:.*]]: tensor<96x32xf32>, %[[B:.*]]: tensor<96xf32>)
// CHECK:         %[[L0:.*]] = nn.linear %[[X]], %[[W]] : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
// CHECK:         %[[L1:.*]] = nn.linear %[[X]], %[[W]], %[[B]] : (tensor<2x16x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
// CHECK:         %[[L2:.*]] = nn.linear %[[X]], %[[WT]] {transpose_weight = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>) -> tensor<2x16x96xf32>
// CHECK:         %[[L3:.*]] = nn.linear %[[X]], %[[WT]], %[[B]] {transpose_weight = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
// CHECK:         return %[[L0]], %[[L1]], %[[L2]], %[[L3]]
func.func @linear(%x: tensor<2x16x32xf32>, %w: tensor<32x96xf32>, %wt: tensor<96x32xf32>, %b: tensor<96xf32>) -> (tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>) {
  %l0 = nn.linear %x, %w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
  %l1 = nn.linear %x, %w, %b : (tensor<2x16x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
  %l2 = nn.linear %x, %wt {transpose_weight = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>) -> tensor<2x16x96xf32>
  %l3 = nn.linear %x, %wt, %b {transpose_weight = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
  return %l0, %l1, %l2, %l3 : tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%[[S:.*]]: tensor<2x4x16x16xf32>)
// CHECK:         %[[P:.*]] = nn.softmax %[[S]] {axis = 3 : i64} : tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
// CHECK:         return %[[P]]
func.func @softmax(%s: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %p = nn.softmax %s {axis = 3} : tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
  return %p : tensor<2x4x16x16xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x32xf32>, %[[G:.*]]: tensor<32xf32>, %[[B:.*]]: tensor<32xf32>, %[[G2:.*]]: tensor<16x32xf32>)
// CHECK:         %[[Y0:.*]] = nn.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
// CHECK:         %[[Y1:.*]] = nn.layer_norm %[[Y0]], %[[G2]] {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<2x16x32xf32>, tensor<16x32xf32>) -> tensor<2x16x32xf32>
// CHECK:         return %[[Y1]]
func.func @layer_norm(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %g2: tensor<16x32xf32>) -> tensor<2x16x32xf32> {
  %y0 = nn.layer_norm %x, %g, %b {axis = 2, epsilon = 1.0e-05 : f32} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  %y1 = nn.layer_norm %y0, %g2 {axis = 1, epsilon = 1.0e-06 : f32} : (tensor<2x16x32xf32>, tensor<16x32xf32>) -> tensor<2x16x32xf32>
  return %y1 : tensor<2x16x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Indexing and shapes
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @gather
// CHECK-SAME:    (%[[T:.*]]: tensor<32x64xf32>, %[[IDS:.*]]: tensor<2x16xi64>, %[[I32:.*]]: tensor<3xi32>)
// CHECK:         %[[E:.*]] = nn.gather %[[T]], %[[IDS]] {axis = 0 : i64} : (tensor<32x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
// CHECK:         %[[C:.*]] = nn.gather %[[T]], %[[I32]] {axis = 1 : i64} : (tensor<32x64xf32>, tensor<3xi32>) -> tensor<32x3xf32>
// CHECK:         return %[[E]], %[[C]]
func.func @gather(%t: tensor<32x64xf32>, %ids: tensor<2x16xi64>, %i32: tensor<3xi32>) -> (tensor<2x16x64xf32>, tensor<32x3xf32>) {
  %e = nn.gather %t, %ids {axis = 0} : (tensor<32x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %c = nn.gather %t, %i32 {axis = 1} : (tensor<32x64xf32>, tensor<3xi32>) -> tensor<32x3xf32>
  return %e, %c : tensor<2x16x64xf32>, tensor<32x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_transpose
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x32xf32>)
// CHECK:         %[[R:.*]] = nn.reshape %[[X]] : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
// CHECK:         %[[T:.*]] = nn.transpose %[[R]] {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
// CHECK:         return %[[T]]
func.func @reshape_transpose(%x: tensor<2x16x32xf32>) -> tensor<2x4x16x8xf32> {
  %r = nn.reshape %x : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  return %t : tensor<2x4x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @split
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x96xf32>)
// CHECK:         %[[S:.*]]:3 = nn.split %[[X]] {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : tensor<2x16x96xf32> -> tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
// CHECK:         %[[U:.*]]:2 = nn.split %[[X]] {axis = 1 : i64, sizes = array<i64: 4, 12>} : tensor<2x16x96xf32> -> tensor<2x4x96xf32>, tensor<2x12x96xf32>
// CHECK:         return %[[S]]#0, %[[S]]#1, %[[S]]#2, %[[U]]#1
func.func @split(%x: tensor<2x16x96xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x12x96xf32>) {
  %q, %k, %v = nn.split %x {axis = 2, sizes = array<i64: 32, 32, 32>} : tensor<2x16x96xf32> -> tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
  %a, %b = nn.split %x {axis = 1, sizes = array<i64: 4, 12>} : tensor<2x16x96xf32> -> tensor<2x4x96xf32>, tensor<2x12x96xf32>
  return %q, %k, %v, %b : tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x12x96xf32>
}

// -----

// CHECK-LABEL: func.func @slice
// CHECK-SAME:    (%[[X:.*]]: tensor<4x16xf32>)
// CHECK:         %[[S:.*]] = nn.slice %[[X]] {offsets = array<i64: 0, 8>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 1>} : tensor<4x16xf32> -> tensor<4x8xf32>
// CHECK:         %[[E:.*]] = nn.slice %[[X]] {offsets = array<i64: 1, 1>, sizes = array<i64: 2, 8>, strides = array<i64: 2, 2>} : tensor<4x16xf32> -> tensor<2x8xf32>
// CHECK:         return %[[S]], %[[E]]
func.func @slice(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<2x8xf32>) {
  %s = nn.slice %x {offsets = array<i64: 0, 8>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 1>} : tensor<4x16xf32> -> tensor<4x8xf32>
  %e = nn.slice %x {offsets = array<i64: 1, 1>, sizes = array<i64: 2, 8>, strides = array<i64: 2, 2>} : tensor<4x16xf32> -> tensor<2x8xf32>
  return %s, %e : tensor<4x8xf32>, tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>)
// CHECK:         %[[C:.*]] = nn.concat %[[A]], %[[B]], %[[A]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
// CHECK:         %[[D:.*]] = nn.concat %[[A]] {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         return %[[C]], %[[D]]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> (tensor<2x11xf32>, tensor<2x3xf32>) {
  %c = nn.concat %a, %b, %a {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %d = nn.concat %a {axis = 0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %c, %d : tensor<2x11xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @unsqueeze
// CHECK-SAME:    (%[[M:.*]]: tensor<16x16xi1>)
// CHECK:         %[[U:.*]] = nn.unsqueeze %[[M]] {axes = array<i64: 0, 1>} : tensor<16x16xi1> -> tensor<1x1x16x16xi1>
// CHECK:         %[[V:.*]] = nn.unsqueeze %[[M]] {axes = array<i64: 1, 3>} : tensor<16x16xi1> -> tensor<16x1x16x1xi1>
// CHECK:         return %[[U]], %[[V]]
func.func @unsqueeze(%m: tensor<16x16xi1>) -> (tensor<1x1x16x16xi1>, tensor<16x1x16x1xi1>) {
  %u = nn.unsqueeze %m {axes = array<i64: 0, 1>} : tensor<16x16xi1> -> tensor<1x1x16x16xi1>
  %v = nn.unsqueeze %m {axes = array<i64: 1, 3>} : tensor<16x16xi1> -> tensor<16x1x16x1xi1>
  return %u, %v : tensor<1x1x16x16xi1>, tensor<16x1x16x1xi1>
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @losses
// CHECK-SAME:    (%[[LOGITS:.*]]: tensor<2x16x32xf32>, %[[LABELS:.*]]: tensor<2x16xi64>, %[[P:.*]]: tensor<8x10xf32>, %[[T:.*]]: tensor<8x10xf32>)
// CHECK:         %[[CE:.*]] = nn.cross_entropy %[[LOGITS]], %[[LABELS]] : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<f32>
// CHECK:         %[[MSE:.*]] = nn.mse %[[P]], %[[T]] : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
// CHECK:         return %[[CE]], %[[MSE]]
func.func @losses(%logits: tensor<2x16x32xf32>, %labels: tensor<2x16xi64>, %p: tensor<8x10xf32>, %t: tensor<8x10xf32>) -> (tensor<f32>, tensor<f32>) {
  %ce = nn.cross_entropy %logits, %labels : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<f32>
  %mse = nn.mse %p, %t : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
  return %ce, %mse : tensor<f32>, tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// Reductions and slice insertion
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce_sum
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x96xf32>)
// CHECK:         %[[S:.*]] = nn.reduce_sum %[[X]] {axes = array<i64: 0, 1>} : tensor<2x16x96xf32> -> tensor<96xf32>
// CHECK:         %[[K:.*]] = nn.reduce_sum %[[X]] {axes = array<i64: 1>, keep_dims = true} : tensor<2x16x96xf32> -> tensor<2x1x96xf32>
// CHECK:         %[[A:.*]] = nn.reduce_sum %[[X]] {axes = array<i64: 0, 1, 2>} : tensor<2x16x96xf32> -> tensor<f32>
// CHECK:         %[[N:.*]] = nn.reduce_sum %[[X]] {axes = array<i64>} : tensor<2x16x96xf32> -> tensor<2x16x96xf32>
// CHECK:         return %[[S]], %[[K]], %[[A]], %[[N]]
func.func @reduce_sum(%x: tensor<2x16x96xf32>) -> (tensor<96xf32>, tensor<2x1x96xf32>, tensor<f32>, tensor<2x16x96xf32>) {
  %s = nn.reduce_sum %x {axes = array<i64: 0, 1>} : tensor<2x16x96xf32> -> tensor<96xf32>
  %k = nn.reduce_sum %x {axes = array<i64: 1>, keep_dims = true} : tensor<2x16x96xf32> -> tensor<2x1x96xf32>
  %a = nn.reduce_sum %x {axes = array<i64: 0, 1, 2>} : tensor<2x16x96xf32> -> tensor<f32>
  %n = nn.reduce_sum %x {axes = array<i64>} : tensor<2x16x96xf32> -> tensor<2x16x96xf32>
  return %s, %k, %a, %n : tensor<96xf32>, tensor<2x1x96xf32>, tensor<f32>, tensor<2x16x96xf32>
}

// -----

// CHECK-LABEL: func.func @insert_slice
// CHECK-SAME:    (%[[S:.*]]: tensor<4x8xf32>, %[[D:.*]]: tensor<4x16xf32>, %[[E:.*]]: tensor<2x8xf32>)
// CHECK:         %[[R:.*]] = nn.insert_slice %[[S]] into %[[D]] {offsets = array<i64: 0, 8>, strides = array<i64: 1, 1>} : tensor<4x8xf32> into tensor<4x16xf32>
// CHECK:         %[[T:.*]] = nn.insert_slice %[[E]] into %[[R]] {offsets = array<i64: 1, 1>, strides = array<i64: 2, 2>} : tensor<2x8xf32> into tensor<4x16xf32>
// CHECK:         return %[[T]]
func.func @insert_slice(%s: tensor<4x8xf32>, %d: tensor<4x16xf32>, %e: tensor<2x8xf32>) -> tensor<4x16xf32> {
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 8>, strides = array<i64: 1, 1>} : tensor<4x8xf32> into tensor<4x16xf32>
  %t = nn.insert_slice %e into %r {offsets = array<i64: 1, 1>, strides = array<i64: 2, 2>} : tensor<2x8xf32> into tensor<4x16xf32>
  return %t : tensor<4x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Gradient kernels
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @gather_grad
// CHECK-SAME:    (%[[IDS:.*]]: tensor<2x16xi64>, %[[DY:.*]]: tensor<2x16x64xf32>, %[[I32:.*]]: tensor<3xi32>, %[[DC:.*]]: tensor<32x3xf32>)
// CHECK:         %[[T:.*]] = nn.gather_grad %[[IDS]], %[[DY]] {axis = 0 : i64} : (tensor<2x16xi64>, tensor<2x16x64xf32>) -> tensor<32x64xf32>
// CHECK:         %[[C:.*]] = nn.gather_grad %[[I32]], %[[DC]] {axis = 1 : i64} : (tensor<3xi32>, tensor<32x3xf32>) -> tensor<32x64xf32>
// CHECK:         return %[[T]], %[[C]]
func.func @gather_grad(%ids: tensor<2x16xi64>, %dy: tensor<2x16x64xf32>, %i32: tensor<3xi32>, %dc: tensor<32x3xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
  %t = nn.gather_grad %ids, %dy {axis = 0} : (tensor<2x16xi64>, tensor<2x16x64xf32>) -> tensor<32x64xf32>
  %c = nn.gather_grad %i32, %dc {axis = 1} : (tensor<3xi32>, tensor<32x3xf32>) -> tensor<32x64xf32>
  return %t, %c : tensor<32x64xf32>, tensor<32x64xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_grad
// CHECK-SAME:    (%[[Y:.*]]: tensor<2x4x16x16xf32>, %[[DY:.*]]: tensor<2x4x16x16xf32>)
// CHECK:         %[[DX:.*]] = nn.softmax_grad %[[Y]], %[[DY]] {axis = 3 : i64} : tensor<2x4x16x16xf32>
// CHECK:         return %[[DX]]
func.func @softmax_grad(%y: tensor<2x4x16x16xf32>, %dy: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %dx = nn.softmax_grad %y, %dy {axis = 3} : tensor<2x4x16x16xf32>
  return %dx : tensor<2x4x16x16xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_grad
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x32xf32>, %[[G:.*]]: tensor<32xf32>, %[[DY:.*]]: tensor<2x16x32xf32>, %[[G2:.*]]: tensor<16x32xf32>)
// CHECK:         %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = nn.layer_norm_grad %[[X]], %[[G]], %[[DY]] {axis = 2 : i64} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
// CHECK:         %[[DX2:.*]], %[[DG2:.*]], %[[DB2:.*]] = nn.layer_norm_grad %[[X]], %[[G2]], %[[DX]] {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<2x16x32xf32>, tensor<16x32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK:         return %[[DX2]], %[[DG]], %[[DB]], %[[DG2]], %[[DB2]]
func.func @layer_norm_grad(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %dy: tensor<2x16x32xf32>, %g2: tensor<16x32xf32>) -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy {axis = 2, epsilon = 1.0e-05 : f32} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %dx2, %dg2, %db2 = nn.layer_norm_grad %x, %g2, %dx {axis = 1, epsilon = 1.0e-06 : f32} : (tensor<2x16x32xf32>, tensor<16x32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>)
  return %dx2, %dg, %db, %dg2, %db2 : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_grad
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[DY:.*]]: tensor<4x8xf32>, %[[H:.*]]: tensor<8xbf16>)
// CHECK:         %[[DX:.*]] = nn.gelu_grad %[[X]], %[[DY]] : tensor<4x8xf32>
// CHECK:         %[[DH:.*]] = nn.gelu_grad %[[H]], %[[H]] : tensor<8xbf16>
// CHECK:         return %[[DX]], %[[DH]]
func.func @gelu_grad(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %h: tensor<8xbf16>) -> (tensor<4x8xf32>, tensor<8xbf16>) {
  %dx = nn.gelu_grad %x, %dy : tensor<4x8xf32>
  %dh = nn.gelu_grad %h, %h : tensor<8xbf16>
  return %dx, %dh : tensor<4x8xf32>, tensor<8xbf16>
}

// -----

// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK-SAME:    (%[[LOGITS:.*]]: tensor<2x16x32xf32>, %[[LABELS:.*]]: tensor<2x16xi64>, %[[DL:.*]]: tensor<f32>, %[[V:.*]]: tensor<10xf64>, %[[C:.*]]: tensor<i32>, %[[DV:.*]]: tensor<f64>)
// CHECK:         %[[G:.*]] = nn.cross_entropy_grad %[[LOGITS]], %[[LABELS]], %[[DL]] : (tensor<2x16x32xf32>, tensor<2x16xi64>, tensor<f32>) -> tensor<2x16x32xf32>
// CHECK:         %[[GV:.*]] = nn.cross_entropy_grad %[[V]], %[[C]], %[[DV]] : (tensor<10xf64>, tensor<i32>, tensor<f64>) -> tensor<10xf64>
// CHECK:         return %[[G]], %[[GV]]
func.func @cross_entropy_grad(%logits: tensor<2x16x32xf32>, %labels: tensor<2x16xi64>, %dl: tensor<f32>, %v: tensor<10xf64>, %c: tensor<i32>, %dv: tensor<f64>) -> (tensor<2x16x32xf32>, tensor<10xf64>) {
  %g = nn.cross_entropy_grad %logits, %labels, %dl : (tensor<2x16x32xf32>, tensor<2x16xi64>, tensor<f32>) -> tensor<2x16x32xf32>
  %gv = nn.cross_entropy_grad %v, %c, %dv : (tensor<10xf64>, tensor<i32>, tensor<f64>) -> tensor<10xf64>
  return %g, %gv : tensor<2x16x32xf32>, tensor<10xf64>
}

// -----

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @layer_single_input
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x32xf32>)
// CHECK:         %[[H:.*]] = nn.layer "blocks.0"(%[[X]]) : (tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
// CHECK:         ^bb0(%[[A:.*]]: tensor<2x16x32xf32>):
// CHECK:           %[[R:.*]] = nn.relu %[[A]] : tensor<2x16x32xf32>
// CHECK:           nn.yield %[[R]] : tensor<2x16x32xf32>
// CHECK:         }
// CHECK:         return %[[H]]
func.func @layer_single_input(%x: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  %h = nn.layer "blocks.0" (%x) : (tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  ^bb0(%a: tensor<2x16x32xf32>):
    %r = nn.relu %a : tensor<2x16x32xf32>
    nn.yield %r : tensor<2x16x32xf32>
  }
  return %h : tensor<2x16x32xf32>
}

// -----

// CHECK-LABEL: nn.parameter @fc.weight : tensor<32x16xf32> init normal(2.000000e-02)
// CHECK-LABEL: func.func @layer_multiple_inputs
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[M:.*]]: tensor<8x32xi1>)
// CHECK:         %[[H:.*]]:2 = nn.layer "fc"(%[[X]], %[[M]]) : (tensor<8x16xf32>, tensor<8x32xi1>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
// CHECK:         ^bb0(%[[A:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<8x32xi1>):
// CHECK:           %[[W:.*]] = nn.param @fc.weight : tensor<32x16xf32>
// CHECK:           %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<f32>
// CHECK:           %[[L:.*]] = nn.linear %[[A]], %[[W]] {transpose_weight = true}
// CHECK:           %[[S:.*]] = nn.where %[[B]], %[[L]], %[[Z]]
// CHECK:           nn.yield %[[L]], %[[S]] : tensor<8x32xf32>, tensor<8x32xf32>
// CHECK:         }
// CHECK:         return %[[H]]#0, %[[H]]#1
nn.parameter @"fc.weight" : tensor<32x16xf32> init normal(2.0e-02)
func.func @layer_multiple_inputs(%x: tensor<8x16xf32>, %m: tensor<8x32xi1>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %h:2 = nn.layer "fc" (%x, %m) : (tensor<8x16xf32>, tensor<8x32xi1>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  ^bb0(%a: tensor<8x16xf32>, %b: tensor<8x32xi1>):
    %w = nn.param @"fc.weight" : tensor<32x16xf32>
    %z = nn.constant dense<0.0> : tensor<f32>
    %l = nn.linear %a, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
    %s = nn.where %b, %l, %z : (tensor<8x32xi1>, tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
    nn.yield %l, %s : tensor<8x32xf32>, tensor<8x32xf32>
  }
  return %h#0, %h#1 : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @layer_no_inputs
// CHECK:         %[[H:.*]] = nn.layer "const"() : () -> tensor<4xf32> {
// CHECK:           %[[C:.*]] = nn.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK:           nn.yield %[[C]] : tensor<4xf32>
// CHECK:         return %[[H]]
func.func @layer_no_inputs() -> tensor<4xf32> {
  %h = nn.layer "const" () : () -> tensor<4xf32> {
    %c = nn.constant dense<1.0> : tensor<4xf32>
    nn.yield %c : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}

// The resource blob of @parameter_dense_resource prints once, after the last
// module.
// CHECK:       dialect_resources
// CHECK:         w_blob: "0x040000000000803F00000040"
