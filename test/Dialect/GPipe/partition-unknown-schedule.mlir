// RUN: not gpipe-opt %s --gpipe-partition="stages=2 schedule=zigzag" 2>&1 | FileCheck %s

// An unknown schedule name is refused by the option parser, naming the
// schedules gpipe-partition records.
// CHECK: for the --schedule option: unknown schedule 'zigzag' (expected gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-h2, zbv, dualpipev, zb-auto, v-half or v-min)

nn.parameter @w0 : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @w1 : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @w2 : tensor<32x32xf32> init normal(2.0e-02)

func.func @forward(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %0 = nn.layer "a"(%x) : (tensor<4x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%a: tensor<4x32xf32>):
    %w = nn.param @w0 : tensor<32x32xf32>
    %h = nn.linear %a, %w : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
    nn.yield %h : tensor<4x32xf32>
  }
  %1 = nn.layer "b"(%0) : (tensor<4x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%a: tensor<4x32xf32>):
    %w = nn.param @w1 : tensor<32x32xf32>
    %h = nn.linear %a, %w : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
    nn.yield %h : tensor<4x32xf32>
  }
  %2 = nn.layer "c"(%1) : (tensor<4x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%a: tensor<4x32xf32>):
    %w = nn.param @w2 : tensor<32x32xf32>
    %h = nn.linear %a, %w : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
    nn.yield %h : tensor<4x32xf32>
  }
  return %2 : tensor<4x32xf32>
}
