// RUN: gpipe-opt %s --nn-fuse-attention -split-input-file | FileCheck %s
// RUN: gpipe-opt %s --nn-fuse-attention -split-input-file | gpipe-opt --verify-roundtrip -split-input-file > /dev/null

// nn-fuse-attention: which attention chains become one nn.attention, with
// what scale and bias, and which stay as they are.

// The manual form: q k^T (trans_rhs), a scale, a causal where filling in
// -inf, the softmax, the product with v. The mask becomes an additive bias
// where(m, -inf, 0); the chain's ops are gone.
// CHECK-LABEL: func.func @manual
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[K:.*]]: tensor<2x4x8x16xf32>, %[[V:.*]]: tensor<2x4x8x16xf32>, %[[M:.*]]: tensor<8x8xi1>)
// CHECK-DAG:     %[[NINF:.*]] = nn.constant dense<0xFF800000> : tensor<f32>
// CHECK-DAG:     %[[ZERO:.*]] = nn.constant dense<0.000000e+00> : tensor<f32>
// CHECK:         %[[B:.*]] = nn.where %[[M]], %[[NINF]], %[[ZERO]] : (tensor<8x8xi1>, tensor<f32>, tensor<f32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[O:.*]] = nn.attention %[[Q]], %[[K]], %[[V]], %[[B]] {scale = 2.500000e-01 : f32}
// CHECK-NEXT:    return %[[O]]
// CHECK-NOT:     nn.softmax
func.func @manual(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %m: tensor<8x8xi1>) -> tensor<2x4x8x16xf32> {
  %c = nn.constant dense<0.25> : tensor<f32>
  %ninf = nn.constant dense<0xFF800000> : tensor<f32>
  %s = nn.matmul %q, %k {trans_rhs = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %t = nn.mul %s, %c : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %w = nn.where %m, %ninf, %t : (tensor<8x8xi1>, tensor<f32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = nn.softmax %w {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %o = nn.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// The exported scaled_dot_product_attention: q and k^T each scaled by a
// root of the scale, k^T a transpose of the heads' split, an additive mask,
// the NaN guard after the softmax. The scales multiply; k is the split
// transposed once (the two permutations composed).
// CHECK-LABEL: func.func @sdpa
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[X:.*]]: tensor<2x8x4x16xf32>, %[[V:.*]]: tensor<2x4x8x16xf32>, %[[MASK:.*]]: tensor<2x1x8x8xf32>)
// CHECK:         %[[K:.*]] = nn.transpose %[[X]] {perm = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
// CHECK-NEXT:    %[[O:.*]] = nn.attention %[[Q]], %[[K]], %[[V]], %[[MASK]] {scale = 2.500000e-01 : f32}
// CHECK-NEXT:    return %[[O]]
func.func @sdpa(%q: tensor<2x4x8x16xf32>, %x: tensor<2x8x4x16xf32>, %v: tensor<2x4x8x16xf32>, %mask: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %c = nn.constant dense<0.5> : tensor<f32>
  %zero = nn.constant dense<0.0> : tensor<1xf32>
  %kt = nn.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<2x8x4x16xf32> -> tensor<2x4x16x8xf32>
  %qs = nn.mul %q, %c : (tensor<2x4x8x16xf32>, tensor<f32>) -> tensor<2x4x8x16xf32>
  %ks = nn.mul %kt, %c : (tensor<2x4x16x8xf32>, tensor<f32>) -> tensor<2x4x16x8xf32>
  %s = nn.matmul %qs, %ks : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %a = nn.add %s, %mask : (tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = nn.softmax %a {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %nan = nn.compare ne, %p, %p : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xi1>
  %g = nn.where %nan, %zero, %p : (tensor<2x4x8x8xi1>, tensor<1xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %o = nn.matmul %g, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// nn.MultiheadAttention's form: heads folded into the batch (3-D), q
// scaled before the product, k^T any tensor of that shape (here an
// argument: transposed for the fused op), divided scores.
// CHECK-LABEL: func.func @mha
// CHECK-SAME:    (%[[Q:.*]]: tensor<8x5x4xf32>, %[[KT:.*]]: tensor<8x4x6xf32>, %[[V:.*]]: tensor<8x6x3xf32>)
// CHECK:         %[[K:.*]] = nn.transpose %[[KT]] {perm = array<i64: 0, 2, 1>} : tensor<8x4x6xf32> -> tensor<8x6x4xf32>
// CHECK-NEXT:    %[[O:.*]] = nn.attention %[[Q]], %[[K]], %[[V]] {scale = 1.250000e-01 : f32}
// CHECK-NEXT:    return %[[O]]
func.func @mha(%q: tensor<8x5x4xf32>, %kt: tensor<8x4x6xf32>, %v: tensor<8x6x3xf32>) -> tensor<8x5x3xf32> {
  %c = nn.constant dense<0.5> : tensor<f32>
  %d = nn.constant dense<4.0> : tensor<f32>
  %qs = nn.mul %c, %q : (tensor<f32>, tensor<8x5x4xf32>) -> tensor<8x5x4xf32>
  %s = nn.matmul %qs, %kt : (tensor<8x5x4xf32>, tensor<8x4x6xf32>) -> tensor<8x5x6xf32>
  %t = nn.div %s, %d : (tensor<8x5x6xf32>, tensor<f32>) -> tensor<8x5x6xf32>
  %p = nn.softmax %t {axis = 2 : i64} : tensor<8x5x6xf32> -> tensor<8x5x6xf32>
  %o = nn.matmul %p, %v : (tensor<8x5x6xf32>, tensor<8x6x3xf32>) -> tensor<8x5x3xf32>
  return %o : tensor<8x5x3xf32>
}

// -----

// Left as they are: probabilities read twice (returned), a mask that
// depends on a parameter, a softmax over another axis, a scaling after the
// mask, and key heads broadcast to the queries' (grouped queries).
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     nn.attention
// CHECK:         return
nn.parameter @bias : tensor<8x8xf32> init zeros
func.func @kept(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %m: tensor<8x8xi1>, %kg: tensor<2x1x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) {
  %c = nn.constant dense<0.25> : tensor<f32>
  %ninf = nn.constant dense<0xFF800000> : tensor<f32>
  %s1 = nn.matmul %q, %k {trans_rhs = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %p1 = nn.softmax %s1 {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %o1 = nn.matmul %p1, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %b = nn.param @bias : tensor<8x8xf32>
  %s2 = nn.matmul %q, %k {trans_rhs = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %a2 = nn.add %s2, %b : (tensor<2x4x8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8x8xf32>
  %p2 = nn.softmax %a2 {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %o2 = nn.matmul %p2, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %s3 = nn.matmul %q, %k {trans_rhs = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %p3 = nn.softmax %s3 {axis = 2 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %o3 = nn.matmul %p3, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %s4 = nn.matmul %q, %k {trans_rhs = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %w4 = nn.where %m, %ninf, %s4 : (tensor<8x8xi1>, tensor<f32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %t4 = nn.mul %w4, %c : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %p4 = nn.softmax %t4 {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %o4 = nn.matmul %p4, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %s5 = nn.matmul %q, %kg {trans_rhs = true} : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x8xf32>
  %p5 = nn.softmax %s5 {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %o5 = nn.matmul %p5, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o1, %p1, %o2, %o3, %o4, %o5 : tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
}
