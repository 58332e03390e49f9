// RUN: gpipe-opt %s --nn-attach-loss -split-input-file -verify-diagnostics -mlir-print-local-scope -mlir-print-debuginfo | FileCheck %s
// The runs with other options fail on some cases (the error cases at the end
// under mse, every case without @head under func=head): they check only the
// functions they rewrote.
// RUN: not gpipe-opt %s --nn-attach-loss=loss=mse -split-input-file 2>/dev/null | FileCheck %s --check-prefix=MSE
// RUN: not gpipe-opt %s --nn-attach-loss=func=head -split-input-file 2>/dev/null | FileCheck %s --check-prefix=HEAD
// RUN: not gpipe-opt %s --nn-attach-loss=loss=hinge -split-input-file 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not gpipe-opt %s --nn-attach-loss=func=missing -split-input-file 2>&1 | FileCheck %s --check-prefix=MISSING

// UNKNOWN: for the --loss option: unknown loss 'hinge' (expected cross-entropy or mse)
// MISSING: error: no function named 'missing' to attach the loss to

// A classifier's logits [batch, classes] take integer labels [batch]; the
// loss op is located at "/loss/CrossEntropy" so layer formation names it.

// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32> loc({{.*}}), %[[LABELS:.*]]: tensor<8xi64> loc("labels"({{.*}}))) -> tensor<f32>
// CHECK:         %[[Y:.*]] = nn.linear %[[X]]
// CHECK:         %[[LOSS:.*]] = nn.cross_entropy %[[Y]], %[[LABELS]] : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> loc("/loss/CrossEntropy"({{.*}}))
// CHECK:         return %[[LOSS]] : tensor<f32>

// MSE-LABEL: func.func @forward
// MSE-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[TARGET:.*]]: tensor<8x10xf32>) -> tensor<f32>
// MSE:         %[[Y:.*]] = nn.linear %[[X]]
// MSE:         %[[LOSS:.*]] = nn.mse %[[Y]], %[[TARGET]] : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
// MSE:         return %[[LOSS]] : tensor<f32>
nn.parameter @"fc.weight" : tensor<10x16xf32> init normal(2.0e-02)
func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x10xf32> {
  %w = nn.param @"fc.weight" : tensor<10x16xf32>
  %y = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}

// -----

// A language model's logits [batch, seq, vocab] take token labels
// [batch, seq]; the network's layers are left as they are and the loss
// follows the last one.

// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[IDS:.*]]: tensor<2x4xi64> loc({{.*}}), %[[LABELS:.*]]: tensor<2x4xi64> loc("labels"({{.*}}))) -> tensor<f32>
// CHECK:         %[[LOGITS:.*]] = nn.layer "head"(%[[IDS]])
// CHECK:         %[[LOSS:.*]] = nn.cross_entropy %[[LOGITS]], %[[LABELS]] : (tensor<2x4x11xf32>, tensor<2x4xi64>) -> tensor<f32>
// CHECK:         return %[[LOSS]]

// MSE-LABEL: func.func @forward
// MSE-SAME:    (%[[IDS:.*]]: tensor<2x4xi64>, %[[TARGET:.*]]: tensor<2x4x11xf32>) -> tensor<f32>
// MSE:         nn.mse %{{.*}}, %[[TARGET]] : (tensor<2x4x11xf32>, tensor<2x4x11xf32>) -> tensor<f32>
nn.parameter @"emb.weight" : tensor<11x8xf32> init normal(2.0e-02)
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x11xf32> {
  %h = nn.layer "head" (%ids) : (tensor<2x4xi64>) -> tensor<2x4x11xf32> {
  ^bb0(%a: tensor<2x4xi64>):
    %e = nn.param @"emb.weight" : tensor<11x8xf32>
    %g = nn.gather %e, %a {axis = 0} : (tensor<11x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    %l = nn.linear %g, %e {transpose_weight = true} : (tensor<2x4x8xf32>, tensor<11x8xf32>) -> tensor<2x4x11xf32>
    nn.yield %l : tensor<2x4x11xf32>
  }
  return %h : tensor<2x4x11xf32>
}

// -----

// `func` names the network function; others are left alone.

// HEAD-LABEL: func.func @forward
// HEAD-SAME:    (%{{.*}}: tensor<4x3xf64>) -> tensor<4x3xf64>
// HEAD-LABEL: func.func @head
// HEAD-SAME:    (%[[X:.*]]: tensor<4x3xf64>, %[[LABELS:.*]]: tensor<4xi64>) -> tensor<f64>
// HEAD:         %[[LOSS:.*]] = nn.cross_entropy %[[X]], %[[LABELS]] : (tensor<4x3xf64>, tensor<4xi64>) -> tensor<f64>
// HEAD:         return %[[LOSS]]
func.func @forward(%x: tensor<4x3xf64>) -> tensor<4x3xf64> {
  return %x : tensor<4x3xf64>
}
func.func @head(%x: tensor<4x3xf64>) -> tensor<4x3xf64> {
  return %x : tensor<4x3xf64>
}

// -----

//===----------------------------------------------------------------------===//
// Errors, reported at the function
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'func.func' op expected one result to attach a cross-entropy loss to, got 2}}
func.func @forward(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  return %x, %x : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// expected-error @+1 {{'func.func' op expected one result to attach a cross-entropy loss to, got 0}}
func.func @forward(%x: tensor<4x3xf32>) {
  return
}

// -----

// expected-error @+1 {{'func.func' op cannot attach a cross-entropy loss to a result of type 'tensor<4xi64>': expected a float tensor}}
func.func @forward(%x: tensor<4xi64>) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}

// -----

// Cross-entropy needs a class dim; mse takes a scalar prediction.

// MSE-LABEL: func.func @forward(%{{.*}}: tensor<f32>, %{{.*}}: tensor<f32>) -> tensor<f32>
// MSE-NEXT:    %[[LOSS:.*]] = nn.mse %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// MSE-NEXT:    return %[[LOSS]]

// expected-error @+1 {{'func.func' op cannot attach a cross-entropy loss to a result of type 'tensor<f32>': expected logits with a class dim}}
func.func @forward(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op expected a body of one block to attach a cross-entropy loss to}}
func.func private @forward(%x: tensor<4x3xf32>) -> tensor<4x3xf32>
