// RUN: gpipe-opt %s -allow-unregistered-dialect -split-input-file -verify-diagnostics --nn-microbatch=microbatches=4 | FileCheck %s
// RUN: gpipe-opt %s -allow-unregistered-dialect -split-input-file --nn-microbatch=microbatches=1 | FileCheck %s --check-prefix=ONE
// RUN: not gpipe-opt %s -allow-unregistered-dialect -split-input-file --nn-microbatch=microbatches=0 2>&1 | FileCheck %s --check-prefix=ZERO

// nn-microbatch with M = 4: the batch, dim 0 of every argument of @forward,
// goes from 8 to 2 in every tensor that carries it. Each case is a module
// named for what it tests. With M = 1 nothing changes; M = 0 is an error.

// ZERO: error: expected a positive number of micro-batches, got 0

// Elementwise ops with a broadcast parameter and scalar constant: the
// parameter and the constant keep their types. Only @forward (the func=
// option's default) is rewritten.

// CHECK-LABEL: module @elementwise_broadcast_param
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x16xf32>) -> tensor<2x16xf32>
// CHECK:           %[[B:.*]] = nn.param @bias : tensor<16xf32>
// CHECK:           %[[C:.*]] = nn.constant dense<5.000000e-01> : tensor<f32>
// CHECK:           %[[A:.*]] = nn.add %[[B]], %[[X]] : (tensor<16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
// CHECK:           %[[M:.*]] = nn.mul %[[A]], %[[C]] : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
// CHECK:           %[[R:.*]] = nn.relu %[[M]] : tensor<2x16xf32>
// CHECK:           return %[[R]] : tensor<2x16xf32>
// CHECK:         func.func @network(%{{.*}}: tensor<8x16xf32>) -> tensor<8x16xf32>

// M = 1 is the identity.
// ONE-LABEL: module @elementwise_broadcast_param
// ONE:         func.func @forward(%{{.*}}: tensor<8x16xf32>) -> tensor<8x16xf32>
// ONE:           nn.add %{{.*}}, %{{.*}} : (tensor<16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
module @elementwise_broadcast_param {
  nn.parameter @bias : tensor<16xf32> init zeros
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %b = nn.param @bias : tensor<16xf32>
    %c = nn.constant dense<5.000000e-01> : tensor<f32>
    %a = nn.add %b, %x : (tensor<16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %m = nn.mul %a, %c : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
    %r = nn.relu %m : tensor<8x16xf32>
    return %r : tensor<8x16xf32>
  }
  func.func @network(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %b = nn.param @bias : tensor<16xf32>
    %a = nn.add %b, %x : (tensor<16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %a : tensor<8x16xf32>
  }
}

// -----

// Linear and gemm keep the rows; the weight and bias keep their types.

// CHECK-LABEL: module @linear_on_3d_input
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x5x16xf32>) -> tensor<2x5x32xf32>
// CHECK:           nn.linear %[[X]], %{{.*}}, %{{.*}} {transpose_weight = true} : (tensor<2x5x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<2x5x32xf32>
module @linear_on_3d_input {
  nn.parameter @w : tensor<32x16xf32> init normal(2.0e-02)
  nn.parameter @b : tensor<32xf32> init zeros
  func.func @forward(%x: tensor<8x5x16xf32>) -> tensor<8x5x32xf32> {
    %w = nn.param @w : tensor<32x16xf32>
    %b = nn.param @b : tensor<32xf32>
    %y = nn.linear %x, %w, %b {transpose_weight = true} : (tensor<8x5x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x5x32xf32>
    return %y : tensor<8x5x32xf32>
  }
}

// -----

// CHECK-LABEL: module @gemm_rows
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x16xf32>) -> tensor<2x4xf32>
// CHECK:           nn.gemm %[[X]], %{{.*}}, %{{.*}} {trans_b = true} : (tensor<2x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<2x4xf32>
module @gemm_rows {
  nn.parameter @w : tensor<4x16xf32> init normal(2.0e-02)
  nn.parameter @b : tensor<4xf32> init zeros
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
    %w = nn.param @w : tensor<4x16xf32>
    %b = nn.param @b : tensor<4xf32>
    %y = nn.gemm %x, %w, %b {trans_b = true} : (tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}

// -----

// With trans_a the rows of `a` are its dim 1.

// CHECK-LABEL: module @gemm_trans_a_rows
// CHECK:         %[[XT:.*]] = nn.transpose %{{.*}} {perm = array<i64: 1, 0>} : tensor<2x16xf32> -> tensor<16x2xf32>
// CHECK:         nn.gemm %[[XT]], %{{.*}} {trans_a = true} : (tensor<16x2xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
module @gemm_trans_a_rows {
  nn.parameter @w : tensor<16x4xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
    %w = nn.param @w : tensor<16x4xf32>
    %xt = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    %y = nn.gemm %xt, %w {trans_a = true} : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}

// -----

// Attention scores [B, H, T, T]: the batch is a leading (batch-of-matrices)
// dim of both matmul operands; softmax runs over the keys.

// CHECK-LABEL: module @matmul_attention
// CHECK:         func.func @forward(%[[Q:.*]]: tensor<2x2x4x16xf32>, %[[K:.*]]: tensor<2x2x4x16xf32>, %[[V:.*]]: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
// CHECK:           %[[KT:.*]] = nn.transpose %[[K]] {perm = array<i64: 0, 1, 3, 2>} : tensor<2x2x4x16xf32> -> tensor<2x2x16x4xf32>
// CHECK:           %[[S:.*]] = nn.matmul %[[Q]], %[[KT]] : (tensor<2x2x4x16xf32>, tensor<2x2x16x4xf32>) -> tensor<2x2x4x4xf32>
// CHECK:           %[[P:.*]] = nn.softmax %[[S]] {axis = 3 : i64} : tensor<2x2x4x4xf32> -> tensor<2x2x4x4xf32>
// CHECK:           nn.matmul %[[P]], %[[V]] : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
module @matmul_attention {
  func.func @forward(%q: tensor<8x2x4x16xf32>, %k: tensor<8x2x4x16xf32>, %v: tensor<8x2x4x16xf32>) -> tensor<8x2x4x16xf32> {
    %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<8x2x4x16xf32> -> tensor<8x2x16x4xf32>
    %s = nn.matmul %q, %kt : (tensor<8x2x4x16xf32>, tensor<8x2x16x4xf32>) -> tensor<8x2x4x4xf32>
    %p = nn.softmax %s {axis = 3} : tensor<8x2x4x4xf32> -> tensor<8x2x4x4xf32>
    %o = nn.matmul %p, %v : (tensor<8x2x4x4xf32>, tensor<8x2x4x16xf32>) -> tensor<8x2x4x16xf32>
    return %o : tensor<8x2x4x16xf32>
  }
}

// -----

// A matmul whose right operand carries the batch in its columns.

// CHECK-LABEL: module @matmul_batch_in_columns
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x16xf32>) -> tensor<2x4xf32>
// CHECK:           %[[XT:.*]] = nn.transpose %[[X]] {perm = array<i64: 1, 0>} : tensor<2x16xf32> -> tensor<16x2xf32>
// CHECK:           %[[Y:.*]] = nn.matmul %{{.*}}, %[[XT]] : (tensor<4x16xf32>, tensor<16x2xf32>) -> tensor<4x2xf32>
// CHECK:           nn.transpose %[[Y]] {perm = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
module @matmul_batch_in_columns {
  nn.parameter @w : tensor<4x16xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
    %w = nn.param @w : tensor<4x16xf32>
    %xt = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    %y = nn.matmul %w, %xt : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %r = nn.transpose %y {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    return %r : tensor<8x4xf32>
  }
}

// -----

// The gpt_mha form: [T, B, H*hd] -> [T, B*H, hd] puts the batch outermost in
// dim 1 (size B*H = 16 becomes (B/M)*H = 4); [T, B*H, hd] -> [T*B, H*hd]
// makes it an inner factor of dim 0 (T outer: 4*8 = 32 becomes 4*2 = 8),
// which a row-wise linear keeps apart; [T*B, E] -> [T, B, E] splits it out
// again.

// CHECK-LABEL: module @reshape_batch_merged_with_heads
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
// CHECK:           %[[T:.*]] = nn.transpose %[[X]] {perm = array<i64: 1, 0, 2>} : tensor<2x4x6xf32> -> tensor<4x2x6xf32>
// CHECK:           %[[H:.*]] = nn.reshape %[[T]] : tensor<4x2x6xf32> -> tensor<4x4x3xf32>
// CHECK:           %[[S:.*]] = nn.softmax %[[H]] {axis = 2 : i64} : tensor<4x4x3xf32> -> tensor<4x4x3xf32>
// CHECK:           %[[R:.*]] = nn.reshape %[[S]] : tensor<4x4x3xf32> -> tensor<8x6xf32>
// CHECK:           %[[L:.*]] = nn.linear %[[R]], %{{.*}} : (tensor<8x6xf32>, tensor<6x6xf32>) -> tensor<8x6xf32>
// CHECK:           %[[U:.*]] = nn.reshape %[[L]] : tensor<8x6xf32> -> tensor<4x2x6xf32>
// CHECK:           nn.transpose %[[U]] {perm = array<i64: 1, 0, 2>} : tensor<4x2x6xf32> -> tensor<2x4x6xf32>
module @reshape_batch_merged_with_heads {
  nn.parameter @w : tensor<6x6xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x4x6xf32>) -> tensor<8x4x6xf32> {
    %w = nn.param @w : tensor<6x6xf32>
    %t = nn.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<8x4x6xf32> -> tensor<4x8x6xf32>
    %h = nn.reshape %t : tensor<4x8x6xf32> -> tensor<4x16x3xf32>
    %s = nn.softmax %h {axis = 2} : tensor<4x16x3xf32> -> tensor<4x16x3xf32>
    %r = nn.reshape %s : tensor<4x16x3xf32> -> tensor<32x6xf32>
    %l = nn.linear %r, %w : (tensor<32x6xf32>, tensor<6x6xf32>) -> tensor<32x6xf32>
    %u = nn.reshape %l : tensor<32x6xf32> -> tensor<4x8x6xf32>
    %y = nn.transpose %u {perm = array<i64: 1, 0, 2>} : tensor<4x8x6xf32> -> tensor<8x4x6xf32>
    return %y : tensor<8x4x6xf32>
  }
}

// -----

// [B, T, H*hd] -> [B, T, H, hd] and back, as gpt.onnx and the gpt preset
// split heads; the batch stays dim 0.

// CHECK-LABEL: module @reshape_split_heads
// CHECK:         %[[R:.*]] = nn.reshape %{{.*}} : tensor<2x4x6xf32> -> tensor<2x4x2x3xf32>
// CHECK:         nn.reshape %{{.*}} : tensor<2x4x2x3xf32> -> tensor<2x4x6xf32>
module @reshape_split_heads {
  func.func @forward(%x: tensor<8x4x6xf32>) -> tensor<8x4x6xf32> {
    %r = nn.reshape %x : tensor<8x4x6xf32> -> tensor<8x4x2x3xf32>
    %e = nn.exp %r : tensor<8x4x2x3xf32>
    %y = nn.reshape %e : tensor<8x4x2x3xf32> -> tensor<8x4x6xf32>
    return %y : tensor<8x4x6xf32>
  }
}

// -----

// A reshape that cuts the batch of 8 into 2 x 4 across two dims mixes
// samples.

module @reshape_splits_batch_across_dims {
  func.func @forward(%x: tensor<8x6xf32>) -> tensor<2x24xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.reshape' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x6xf32>'): the result 'tensor<2x24xf32>' does not keep the batch of 8 whole within one dim}}
    %r = nn.reshape %x : tensor<8x6xf32> -> tensor<2x24xf32>
    return %r : tensor<2x24xf32>
  }
}

// -----

// [3, B] -> [B, 3]: each row of the result holds elements of several
// samples (the batch would be an inner factor not aligned to a dim).

module @reshape_batch_inner_misaligned {
  func.func @forward(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
    %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x3xf32> -> tensor<3x8xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.reshape' mixes samples along the batch dimension (dim 1 of operand #0 of type 'tensor<3x8xf32>'): the result 'tensor<8x3xf32>' does not keep the batch of 8 whole within one dim}}
    %r = nn.reshape %t : tensor<3x8xf32> -> tensor<8x3xf32>
    return %r : tensor<8x3xf32>
  }
}

// -----

// Transpose moves the batch with its dim.

// CHECK-LABEL: module @transpose_moves_batch
// CHECK:         %[[T:.*]] = nn.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : tensor<2x4x6xf32> -> tensor<6x2x4xf32>
// CHECK:         %[[S:.*]] = nn.softmax %[[T]] {axis = 2 : i64} : tensor<6x2x4xf32> -> tensor<6x2x4xf32>
// CHECK:         nn.transpose %[[S]] {perm = array<i64: 1, 2, 0>} : tensor<6x2x4xf32> -> tensor<2x4x6xf32>
module @transpose_moves_batch {
  func.func @forward(%x: tensor<8x4x6xf32>) -> tensor<8x4x6xf32> {
    %t = nn.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<8x4x6xf32> -> tensor<6x8x4xf32>
    %s = nn.softmax %t {axis = 2} : tensor<6x8x4xf32> -> tensor<6x8x4xf32>
    %y = nn.transpose %s {perm = array<i64: 1, 2, 0>} : tensor<6x8x4xf32> -> tensor<8x4x6xf32>
    return %y : tensor<8x4x6xf32>
  }
}

// -----

// Split and slice on the feature dim keep their sizes along it; the slice
// size on the batch dim goes from 8 to 2. Concat and unsqueeze move the batch
// with their dims.

// CHECK-LABEL: module @split_slice_concat_feature_dim
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x12xf32>) -> tensor<2x14xf32>
// CHECK:           %[[P:.*]]:2 = nn.split %[[X]] {axis = 1 : i64, sizes = array<i64: 4, 8>} : tensor<2x12xf32> -> tensor<2x4xf32>, tensor<2x8xf32>
// CHECK:           %[[S:.*]] = nn.slice %[[X]] {offsets = array<i64: 0, 2>, sizes = array<i64: 2, 2>, strides = array<i64: 1, 2>} : tensor<2x12xf32> -> tensor<2x2xf32>
// CHECK:           %[[C:.*]] = nn.concat %[[P]]#1, %[[S]], %[[P]]#0 {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x2xf32>, tensor<2x4xf32>) -> tensor<2x14xf32>
// CHECK:           %[[U:.*]] = nn.unsqueeze %[[C]] {axes = array<i64: 0, 2>} : tensor<2x14xf32> -> tensor<1x2x1x14xf32>
// CHECK:           nn.reshape %[[U]] : tensor<1x2x1x14xf32> -> tensor<2x14xf32>
module @split_slice_concat_feature_dim {
  func.func @forward(%x: tensor<8x12xf32>) -> tensor<8x14xf32> {
    %p:2 = nn.split %x {axis = 1, sizes = array<i64: 4, 8>} : tensor<8x12xf32> -> tensor<8x4xf32>, tensor<8x8xf32>
    %s = nn.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 8, 2>, strides = array<i64: 1, 2>} : tensor<8x12xf32> -> tensor<8x2xf32>
    %c = nn.concat %p#1, %s, %p#0 {axis = 1} : (tensor<8x8xf32>, tensor<8x2xf32>, tensor<8x4xf32>) -> tensor<8x14xf32>
    %u = nn.unsqueeze %c {axes = array<i64: 0, 2>} : tensor<8x14xf32> -> tensor<1x8x1x14xf32>
    %y = nn.reshape %u : tensor<1x8x1x14xf32> -> tensor<8x14xf32>
    return %y : tensor<8x14xf32>
  }
}

// -----

module @slice_takes_part_of_batch {
  func.func @forward(%x: tensor<8x12xf32>) -> tensor<4x12xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.slice' takes part of the batch dimension (dim 0 of operand #0 of type 'tensor<8x12xf32>')}}
    %s = nn.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 12>, strides = array<i64: 1, 1>} : tensor<8x12xf32> -> tensor<4x12xf32>
    return %s : tensor<4x12xf32>
  }
}

// -----

module @split_along_batch {
  func.func @forward(%x: tensor<8x12xf32>) -> tensor<4x12xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.split' splits the batch dimension (dim 0 of operand #0 of type 'tensor<8x12xf32>')}}
    %p:2 = nn.split %x {axis = 0, sizes = array<i64: 4, 4>} : tensor<8x12xf32> -> tensor<4x12xf32>, tensor<4x12xf32>
    return %p#0 : tensor<4x12xf32>
  }
}

// -----

module @concat_along_batch {
  func.func @forward(%x: tensor<8x12xf32>) -> tensor<16x12xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.concat' concatenates along the batch dimension (dim 0 of operand #0 of type 'tensor<8x12xf32>')}}
    %c = nn.concat %x, %x {axis = 0} : (tensor<8x12xf32>, tensor<8x12xf32>) -> tensor<16x12xf32>
    return %c : tensor<16x12xf32>
  }
}

// -----

// Gather (embedding): the indices carry the batch into the result.

// CHECK-LABEL: module @gather_embedding
// CHECK:         func.func @forward(%[[IDS:.*]]: tensor<2x5xi64>) -> tensor<2x5x6xf32>
// CHECK:           nn.gather %{{.*}}, %[[IDS]] {axis = 0 : i64} : (tensor<10x6xf32>, tensor<2x5xi64>) -> tensor<2x5x6xf32>
module @gather_embedding {
  nn.parameter @table : tensor<10x6xf32> init normal(2.0e-02)
  func.func @forward(%ids: tensor<8x5xi64>) -> tensor<8x5x6xf32> {
    %t = nn.param @table : tensor<10x6xf32>
    %e = nn.gather %t, %ids {axis = 0} : (tensor<10x6xf32>, tensor<8x5xi64>) -> tensor<8x5x6xf32>
    return %e : tensor<8x5x6xf32>
  }
}

// -----

// Gathering rows of a batch-carrying tensor along its batch dim picks among
// samples.

module @gather_along_batch {
  func.func @forward(%x: tensor<8x6xf32>, %ids: tensor<8x3xi64>) -> tensor<8x3x6xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.gather' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x6xf32>')}}
    %e = nn.gather %x, %ids {axis = 0} : (tensor<8x6xf32>, tensor<8x3xi64>) -> tensor<8x3x6xf32>
    return %e : tensor<8x3x6xf32>
  }
}

// -----

// CHECK-LABEL: module @layer_norm_over_features
// CHECK:         nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<2x4x16xf32>
module @layer_norm_over_features {
  nn.parameter @g : tensor<4x16xf32> init ones
  nn.parameter @b : tensor<4x16xf32> init zeros
  func.func @forward(%x: tensor<8x4x16xf32>) -> tensor<8x4x16xf32> {
    %g = nn.param @g : tensor<4x16xf32>
    %b = nn.param @b : tensor<4x16xf32>
    %y = nn.layer_norm %x, %g, %b {axis = 1, epsilon = 1.0e-05 : f32} : (tensor<8x4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<8x4x16xf32>
    return %y : tensor<8x4x16xf32>
  }
}

// -----

module @layer_norm_over_batch {
  nn.parameter @g : tensor<8x16xf32> init ones
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %g = nn.param @g : tensor<8x16xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.layer_norm' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x16xf32>')}}
    %y = nn.layer_norm %x, %g {axis = 0} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
}

// -----

// CHECK-LABEL: module @softmax_over_classes
// CHECK:         nn.softmax %{{.*}} {axis = 1 : i64} : tensor<2x10xf32> -> tensor<2x10xf32>
module @softmax_over_classes {
  func.func @forward(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
    %p = nn.softmax %x {axis = 1} : tensor<8x10xf32> -> tensor<8x10xf32>
    return %p : tensor<8x10xf32>
  }
}

// -----

module @softmax_over_batch {
  func.func @forward(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.softmax' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x10xf32>')}}
    %p = nn.softmax %x {axis = 0} : tensor<8x10xf32> -> tensor<8x10xf32>
    return %p : tensor<8x10xf32>
  }
}

// -----

// x^T x contracts over the samples.

module @matmul_contracts_batch {
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<16x16xf32> {
    %xt = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.matmul' mixes samples along the batch dimension (dim 1 of operand #0 of type 'tensor<16x8xf32>')}}
    %g = nn.matmul %xt, %x : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
    return %g : tensor<16x16xf32>
  }
}

// -----

// x x^T pairs every sample with every other.

module @matmul_outer_product_of_batch {
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x8xf32> {
    %xt = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.matmul' mixes samples along the batch dimension (dim 1 of operand #1 of type 'tensor<16x8xf32>')}}
    %g = nn.matmul %x, %xt : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    return %g : tensor<8x8xf32>
  }
}

// -----

// The training objective: a trailing labels argument (batch in dim 0 too)
// and a scalar loss, now the mean over the micro-batch.

// CHECK-LABEL: module @cross_entropy_with_labels
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x16xf32>, %[[LABELS:.*]]: tensor<2xi64>) -> tensor<f32>
// CHECK:           %[[Y:.*]] = nn.linear %[[X]], %{{.*}} {transpose_weight = true} : (tensor<2x16xf32>, tensor<10x16xf32>) -> tensor<2x10xf32>
// CHECK:           %[[L:.*]] = nn.cross_entropy %[[Y]], %[[LABELS]] : (tensor<2x10xf32>, tensor<2xi64>) -> tensor<f32>
// CHECK:           return %[[L]] : tensor<f32>
module @cross_entropy_with_labels {
  nn.parameter @w : tensor<10x16xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
    %w = nn.param @w : tensor<10x16xf32>
    %y = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x10xf32>
    %l = nn.cross_entropy %y, %labels : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// CHECK-LABEL: module @mse_with_targets
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x4xf32>, %[[T:.*]]: tensor<2x4xf32>) -> tensor<f32>
// CHECK:           nn.mse %{{.*}}, %[[T]] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
module @mse_with_targets {
  func.func @forward(%x: tensor<8x4xf32>, %target: tensor<8x4xf32>) -> tensor<f32> {
    %y = nn.tanh %x : tensor<8x4xf32>
    %l = nn.mse %y, %target : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Layers: the batch flows into the bodies through the block arguments and
// out through nn.yield; constants inside stay. The loss layer takes the
// labels.

// CHECK-LABEL: module @layer_bodies
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x16xf32>, %[[LABELS:.*]]: tensor<2xi64>) -> tensor<f32>
// CHECK:           %[[L0:.*]] = nn.layer "0"(%[[X]]) : (tensor<2x16xf32>) -> tensor<2x10xf32> {
// CHECK:           ^bb0(%[[A:.*]]: tensor<2x16xf32>):
// CHECK:             %[[C:.*]] = nn.constant dense<2.000000e+00> : tensor<f32>
// CHECK:             %[[Y:.*]] = nn.linear %[[A]], %{{.*}} {transpose_weight = true} : (tensor<2x16xf32>, tensor<10x16xf32>) -> tensor<2x10xf32>
// CHECK:             %[[S:.*]] = nn.mul %[[Y]], %[[C]] : (tensor<2x10xf32>, tensor<f32>) -> tensor<2x10xf32>
// CHECK:             nn.yield %[[S]] : tensor<2x10xf32>
// CHECK:           %[[L1:.*]] = nn.layer "loss"(%[[L0]], %[[LABELS]]) : (tensor<2x10xf32>, tensor<2xi64>) -> tensor<f32> {
// CHECK:           ^bb0(%[[P:.*]]: tensor<2x10xf32>, %[[T:.*]]: tensor<2xi64>):
// CHECK:             %[[CE:.*]] = nn.cross_entropy %[[P]], %[[T]] : (tensor<2x10xf32>, tensor<2xi64>) -> tensor<f32>
// CHECK:             nn.yield %[[CE]] : tensor<f32>
// CHECK:           return %[[L1]] : tensor<f32>
module @layer_bodies {
  nn.parameter @"0.weight" : tensor<10x16xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
    %0 = nn.layer "0" (%x) : (tensor<8x16xf32>) -> tensor<8x10xf32> {
    ^bb0(%a: tensor<8x16xf32>):
      %c = nn.constant dense<2.0> : tensor<f32>
      %w = nn.param @"0.weight" : tensor<10x16xf32>
      %y = nn.linear %a, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x10xf32>
      %s = nn.mul %y, %c : (tensor<8x10xf32>, tensor<f32>) -> tensor<8x10xf32>
      nn.yield %s : tensor<8x10xf32>
    }
    %1 = nn.layer "loss" (%0, %labels) : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> {
    ^bb0(%p: tensor<8x10xf32>, %t: tensor<8xi64>):
      %l = nn.cross_entropy %p, %t : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
      nn.yield %l : tensor<f32>
    }
    return %1 : tensor<f32>
  }
}

// -----

// An error inside a layer body is reported at the op in the body.

module @mixing_inside_layer {
  func.func @forward(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
    %0 = nn.layer "0" (%x) : (tensor<8x10xf32>) -> tensor<8x10xf32> {
    ^bb0(%a: tensor<8x10xf32>):
      // expected-error @+1 {{cannot micro-batch: 'nn.softmax' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x10xf32>')}}
      %p = nn.softmax %a {axis = 0} : tensor<8x10xf32> -> tensor<8x10xf32>
      nn.yield %p : tensor<8x10xf32>
    }
    return %0 : tensor<8x10xf32>
  }
}

// -----

// An op the pass does not know may not see the batch; one that does not see
// it keeps its types.

module @unknown_op_on_batch {
  func.func @forward(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
    %c = "test.source"() : () -> tensor<4xf32>
    // expected-error @+1 {{cannot micro-batch: 'test.op' is not known to keep samples apart (dim 0 of operand #0 of type 'tensor<8x10xf32>')}}
    %y = "test.op"(%x, %c) : (tensor<8x10xf32>, tensor<4xf32>) -> tensor<8x10xf32>
    return %y : tensor<8x10xf32>
  }
}

// -----

// A [B, T, T] mask constant whose B slices are identical (a splat, and a
// repeated non-splat value) is cut to its first B/M slices; the
// unbatched [T, T] mask keeps its type.

// CHECK-LABEL: module @batch_sized_constants
// CHECK:         func.func @forward(%[[X:.*]]: tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
// CHECK-DAG:       %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<2x2x2xf32>
// CHECK-DAG:       %[[REP:.*]] = nn.constant dense<{{\[\[\[}}true, false], [true, true]], {{\[\[}}true, false], [true, true]]]> : tensor<2x2x2xi1>
// CHECK-DAG:       %[[TT:.*]] = nn.constant dense<{{\[\[}}false, true], [false, false]]> : tensor<2x2xi1>
// CHECK:           %[[A:.*]] = nn.add %[[X]], %[[Z]] : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
// CHECK:           %[[W:.*]] = nn.where %[[REP]], %[[A]], %{{.*}} : (tensor<2x2x2xi1>, tensor<2x2x2xf32>, tensor<f32>) -> tensor<2x2x2xf32>
// CHECK:           nn.where %[[TT]], %{{.*}}, %[[W]] : (tensor<2x2xi1>, tensor<f32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
module @batch_sized_constants {
  func.func @forward(%x: tensor<8x2x2xf32>) -> tensor<8x2x2xf32> {
    %zero = nn.constant dense<0.0> : tensor<8x2x2xf32>
    %rep = nn.constant dense<[[[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]]]> : tensor<8x2x2xi1>
    %tt = nn.constant dense<[[false, true], [false, false]]> : tensor<2x2xi1>
    %ninf = nn.constant dense<0xFF800000> : tensor<f32>
    %a = nn.add %x, %zero : (tensor<8x2x2xf32>, tensor<8x2x2xf32>) -> tensor<8x2x2xf32>
    %w = nn.where %rep, %a, %ninf : (tensor<8x2x2xi1>, tensor<8x2x2xf32>, tensor<f32>) -> tensor<8x2x2xf32>
    %y = nn.where %tt, %ninf, %w : (tensor<2x2xi1>, tensor<f32>, tensor<8x2x2xf32>) -> tensor<8x2x2xf32>
    return %y : tensor<8x2x2xf32>
  }
}

// -----

module @batch_sized_constant_slices_differ {
  func.func @forward(%x: tensor<8x2xf32>) -> tensor<8x2xf32> {
    %c = nn.constant dense<[[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 2.0]]> : tensor<8x2xf32>
    // expected-error @+1 {{cannot micro-batch: operand #1 of 'nn.add' of type 'tensor<8x2xf32>' has size 8 in dim 0, where the batch is, but does not carry the batch: its slices along the batch differ}}
    %a = nn.add %x, %c : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
    return %a : tensor<8x2xf32>
  }
}

// -----

// A parameter with the batch size is per-position, not per-sample.

module @batch_sized_parameter {
  nn.parameter @p : tensor<8x2xf32> init zeros
  func.func @forward(%x: tensor<8x2xf32>) -> tensor<8x2xf32> {
    %p = nn.param @p : tensor<8x2xf32>
    // expected-error @+1 {{cannot micro-batch: operand #0 of 'nn.mul' of type 'tensor<8x2xf32>' has size 8 in dim 0, where the batch is, but does not carry the batch: it does not come from the arguments}}
    %a = nn.mul %p, %x : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
    return %a : tensor<8x2xf32>
  }
}

// -----

// Adding a tensor to its transpose pairs sample i with feature i.

module @batch_in_two_dims {
  func.func @forward(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.add' mixes samples along the batch dimension (dim 1 of operand #1 of type 'tensor<8x8xf32>')}}
    %a = nn.add %x, %t : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    return %a : tensor<8x8xf32>
  }
}

// -----

module @result_batch_not_in_dim_0 {
  func.func @forward(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
    %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
    // expected-error @+1 {{cannot micro-batch: result #0 of type 'tensor<4x8xf32>' does not carry the batch as the outermost factor of dim 0 (it is in dim 1)}}
    return %t : tensor<4x8xf32>
  }
}

// -----

module @batch_not_divisible {
  // expected-error @+1 {{batch 6 of argument 0 is not divisible by 4 micro-batches}}
  func.func @forward(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
    return %x : tensor<6x4xf32>
  }
}

// -----

module @arguments_disagree_on_batch {
  // expected-error @+1 {{argument 1 has batch 4 but argument 0 has batch 8}}
  func.func @forward(%x: tensor<8x4xf32>, %labels: tensor<4xi64>) -> tensor<8x4xf32> {
    return %x : tensor<8x4xf32>
  }
}

// -----

module @scalar_argument {
  // expected-error @+1 {{cannot micro-batch argument 1 of type 'tensor<f32>': expected a statically shaped tensor with the batch in dim 0}}
  func.func @forward(%x: tensor<8x4xf32>, %s: tensor<f32>) -> tensor<8x4xf32> {
    return %x : tensor<8x4xf32>
  }
}

// -----

// A sum over other dims keeps samples apart: the batch moves down past the
// dims dropped before it (transposed here to dim 1, then dim 0 dropped).
// CHECK-LABEL: module @reduce_sum_other_dims
// CHECK:         nn.reduce_sum %{{.*}} {axes = array<i64: 2>, keep_dims = true} : tensor<4x2x3xf32> -> tensor<4x2x1xf32>
// CHECK:         nn.reduce_sum %{{.*}} {axes = array<i64: 0, 2>} : tensor<4x2x1xf32> -> tensor<2xf32>
module @reduce_sum_other_dims {
  func.func @forward(%x: tensor<8x4x3xf32>) -> tensor<8xf32> {
    %t = nn.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<8x4x3xf32> -> tensor<4x8x3xf32>
    %k = nn.reduce_sum %t {axes = array<i64: 2>, keep_dims = true} : tensor<4x8x3xf32> -> tensor<4x8x1xf32>
    %s = nn.reduce_sum %k {axes = array<i64: 0, 2>} : tensor<4x8x1xf32> -> tensor<8xf32>
    return %s : tensor<8xf32>
  }
}

// -----

module @reduce_sum_over_batch {
  func.func @forward(%x: tensor<8x10xf32>) -> tensor<10xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.reduce_sum' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x10xf32>')}}
    %s = nn.reduce_sum %x {axes = array<i64: 0>} : tensor<8x10xf32> -> tensor<10xf32>
    return %s : tensor<10xf32>
  }
}
