// A layer that alone needs more than the budget (12.5 KiB: weights, their
// gradient and one micro-batch of activations) can fit no partition.

nn.parameter @w0 : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @w1 : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @w2 : tensor<32x32xf32> init normal(2.0e-02)

// expected-error @+2 {{layer 0 needs 12.5 KiB but the memory budget is 8.0 KiB}}
// expected-note @+1 {{the smallest budget that fits is 25.0 KiB}}
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
