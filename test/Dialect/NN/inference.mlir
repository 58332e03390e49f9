// RUN: gpipe-opt %s --nn-inference | FileCheck %s

// nn-inference: batch norm with its running statistics, dropout the
// identity, no loss attached.

// CHECK-LABEL: func.func @forward
// CHECK-SAME:      (%[[X:.*]]: tensor<8x4x2x2xf32>) -> tensor<8x4x2x2xf32>
// CHECK-DAG:     %[[G:.*]] = nn.param @g
// CHECK-DAG:     %[[B:.*]] = nn.param @b
// CHECK-DAG:     %[[M:.*]] = nn.param @m
// CHECK-DAG:     %[[V:.*]] = nn.param @v
// CHECK:         %[[EPS:.*]] = nn.constant dense<9.99999974E-6> : tensor<f32>
// CHECK:         %[[VE:.*]] = nn.add %[[V]], %[[EPS]]
// CHECK:         %[[S:.*]] = nn.sqrt %[[VE]]
// CHECK:         %[[R:.*]] = nn.reciprocal %[[S]]
// CHECK:         %[[A:.*]] = nn.mul %[[G]], %[[R]]
// CHECK:         %[[MA:.*]] = nn.mul %[[M]], %[[A]]
// CHECK:         %[[C:.*]] = nn.sub %[[B]], %[[MA]]
// CHECK:         %[[A4:.*]] = nn.reshape %[[A]] : tensor<4xf32> -> tensor<4x1x1xf32>
// CHECK:         %[[C4:.*]] = nn.reshape %[[C]] : tensor<4xf32> -> tensor<4x1x1xf32>
// CHECK:         %[[XA:.*]] = nn.mul %[[X]], %[[A4]] : (tensor<8x4x2x2xf32>, tensor<4x1x1xf32>) -> tensor<8x4x2x2xf32>
// CHECK:         %[[Y:.*]] = nn.add %[[XA]], %[[C4]]
// CHECK-NOT:     nn.dropout
// CHECK:         return %[[Y]] : tensor<8x4x2x2xf32>
nn.parameter @g : tensor<4xf32> init ones
nn.parameter @b : tensor<4xf32> init zeros
nn.parameter @m : tensor<4xf32> init zeros
nn.parameter @v : tensor<4xf32> init ones
func.func @forward(%x: tensor<8x4x2x2xf32>) -> tensor<8x4x2x2xf32> {
  %g = nn.param @g : tensor<4xf32>
  %b = nn.param @b : tensor<4xf32>
  %m = nn.param @m : tensor<4xf32>
  %v = nn.param @v : tensor<4xf32>
  %y = nn.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<8x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4x2x2xf32>
  %z = nn.dropout %y {ratio = 1.000000e-01 : f32, stream = 7 : i64} : tensor<8x4x2x2xf32>
  return %z : tensor<8x4x2x2xf32>
}
