// RUN: gpipe-opt %s --gpipe-partition="stages=2" -verify-diagnostics
// RUN: gpipe-opt %s --nn-copy-tied-parameters --gpipe-partition="stages=2" | FileCheck %s

// A parameter read by layers on two stages (tied weights) needs a copy per
// reading layer, whose gradients gpipe.sum_tied adds up: the partitioner
// alone refuses it; after nn-copy-tied-parameters each stage reads its own.

// CHECK: nn.parameter @tied : tensor<16x16xf32> init normal
// CHECK-NEXT: nn.parameter @"tied#1" : tensor<16x16xf32> tied_to @tied
// CHECK-LABEL: func.func @train_s0_fwd
// CHECK: nn.param @tied :
// CHECK-LABEL: func.func @train_s1_fwd
// CHECK: nn.param @"tied#1" :

nn.parameter @tied : tensor<16x16xf32> init normal(2.0e-02)

func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = nn.layer "a"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %w = nn.param @tied : tensor<16x16xf32>
    %h = nn.linear %a, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    nn.yield %h : tensor<4x16xf32>
  }
  // expected-error @+1 {{parameter 'tied' is shared by stages 0 and 1; give each layer that reads it a copy of its own first (nn-copy-tied-parameters, which gpipe-compile runs)}}
  %1 = nn.layer "b"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %w = nn.param @tied : tensor<16x16xf32>
    %h = nn.linear %a, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    nn.yield %h : tensor<4x16xf32>
  }
  return %1 : tensor<4x16xf32>
}
