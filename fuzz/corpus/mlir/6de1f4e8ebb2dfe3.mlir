// A parameter read by layers on two stages (tied weights) would need its
// two gradients summed across ranks; until that lands it is an error.

nn.parameter @tied : tensor<16x16xf32> init normal(2.0e-02)

func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = nn.layer "a"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %w = nn.param @tied : tensor<16x16xf32>
    %h = nn.linear %a, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    nn.yield %h : tensor<4x16xf32>
  }
  // expected-error @+1 {{parameter 'tied' is shared by stages 0 and 1; tied weights across stages are not supported yet}}
  %1 = nn.layer "b"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %w = nn.param @tied : tensor<16x16xf32>
    %h = nn.linear %a, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    nn.yield %h : tensor<4x16xf32>
  }
  return %1 : tensor<4x16xf32>
}
