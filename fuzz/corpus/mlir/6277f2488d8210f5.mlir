// Every layer fits the budget alone, but two stages put two layers together,
// which does not fit; the error names the budget that would.

nn.parameter @w0 : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @w1 : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @w2 : tensor<32x32xf32> init normal(2.0e-02)

// expected-error @+1 {{no partition into 2 stages fits the memory budget of 20.0 KiB; the smallest budget that fits is 25.0 KiB (25600 bytes)}}
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
