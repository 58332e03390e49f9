// RUN: gpipe-opt %s --nn-raise-fused-ops -split-input-file | FileCheck %s

// nn-raise-fused-ops applies the fusion patterns on their own.

// CHECK-LABEL: func.func @raise_matmul_bias_to_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x32xf32>, %[[W:.*]]: tensor<32x96xf32>, %[[B:.*]]: tensor<96xf32>)
// CHECK-NEXT:    %[[Y:.*]] = nn.linear %[[X]], %[[W]], %[[B]] : (tensor<2x16x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
// CHECK-NEXT:    return %[[Y]]
func.func @raise_matmul_bias_to_linear(%x: tensor<2x16x32xf32>, %w: tensor<32x96xf32>, %b: tensor<96xf32>) -> tensor<2x16x96xf32> {
  %m = nn.matmul %x, %w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
  %y = nn.add %b, %m : (tensor<96xf32>, tensor<2x16x96xf32>) -> tensor<2x16x96xf32>
  return %y : tensor<2x16x96xf32>
}

// -----

// CHECK-LABEL: func.func @raise_erf_gelu
// CHECK-SAME:    (%[[X:.*]]: tensor<8x32xf32>)
// CHECK-NEXT:    %[[G:.*]] = nn.gelu %[[X]] : tensor<8x32xf32>
// CHECK-NEXT:    return %[[G]]
func.func @raise_erf_gelu(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %x, %sqrt2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %m = nn.mul %x, %a : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = nn.mul %m, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}
