// RUN: gpipe-opt %s -split-input-file --verify-roundtrip
// RUN: gpipe-opt %s -split-input-file --nn-differentiate | FileCheck %s

// The convolution, pooling and batch-norm ops: round trip, and the
// gradient ops reverse mode builds for them.

// CHECK-LABEL: func.func @conv_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<2x4x4x4xf32>)
// CHECK-NEXT:    %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = nn.conv2d_grad %[[X]], %[[W]], %[[DY]] {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
// CHECK-NEXT:    return %[[DX]], %[[DW]], %[[DB]]
func.func @conv(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x4x4xf32> attributes {nn.differentiate} {
  %y = nn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  return %y : tensor<2x4x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @depthwise_bwd
// CHECK:         nn.conv2d_grad {{.*}}groups = 4 : i64{{.*}} -> (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>)
func.func @depthwise(%x: tensor<1x4x5x5xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x1x1xf32> attributes {nn.differentiate} {
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, groups = 4} : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x1x1xf32>
  return %y : tensor<1x4x1x1xf32>
}

// -----

// Max pooling in ceil mode: 7 -> 4 with a 2x2 window moved by 2.
// CHECK-LABEL: func.func @pools_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x7x7xf32>, %[[DY:.*]]: tensor<2x3x1x1xf32>)
// CHECK-NEXT:    %[[DM:.*]] = nn.avg_pool2d_grad %[[DY]] {count_include_pad = true, kernel = array<i64: 4, 4>, {{.*}}} : tensor<2x3x1x1xf32> -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    %[[DX:.*]] = nn.max_pool2d_grad %[[X]], %[[DM]] {ceil_mode = true, {{.*}}} : (tensor<2x3x7x7xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x7x7xf32>
// CHECK-NEXT:    return %[[DX]]
func.func @pools(%x: tensor<2x3x7x7xf32>) -> tensor<2x3x1x1xf32> attributes {nn.differentiate} {
  %m = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : tensor<2x3x7x7xf32> -> tensor<2x3x4x4xf32>
  %a = nn.avg_pool2d %m {kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, count_include_pad = true} : tensor<2x3x4x4xf32> -> tensor<2x3x1x1xf32>
  return %a : tensor<2x3x1x1xf32>
}

// -----

// The running statistics get the batch sums around the running mean.
// CHECK-LABEL: func.func @batch_norm_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4x4xf32>, %[[G:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>, %[[M:.*]]: tensor<3xf32>, %[[V:.*]]: tensor<3xf32>, %[[DY:.*]]: tensor<2x3x4x4xf32>)
// CHECK-NEXT:    %[[DX:.*]], %[[DG:.*]], %[[DB:.*]], %[[SM:.*]], %[[SV:.*]] = nn.batch_norm_grad %[[X]], %[[G]], %[[M]], %[[DY]] {epsilon = 1.000000e-03 : f32}
// CHECK-NEXT:    return %[[DX]], %[[DG]], %[[DB]], %[[SM]], %[[SV]]
func.func @batch_norm(%x: tensor<2x3x4x4xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x4x4xf32> attributes {nn.differentiate} {
  %y = nn.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-3 : f32, momentum = 0.01 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}
