// save-activations (remat none): nothing is recomputed. The forward returns,
// after its result, the values the VJPs read (nn.saved_count of them), and
// the backward takes them between the inputs and the seeds. Values inside
// nested nn.layer ops leave each layer as extra results.



nn.parameter @w : tensor<3x2xf32> init normal(2.0e-02)

func.func @flat(%x: tensor<4x3xf32>) -> tensor<4x2xf32> attributes {nn.differentiate} {
  %w = nn.param @w : tensor<3x2xf32>
  %y = nn.linear %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %r = nn.relu %y : tensor<4x2xf32>
  %t = nn.tanh %r : tensor<4x2xf32>
  return %t : tensor<4x2xf32>
}

func.func @nested(%x: tensor<4x3xf32>) -> tensor<4x2xf32> attributes {nn.differentiate} {
  %0 = nn.layer "outer"(%x) : (tensor<4x3xf32>) -> tensor<4x2xf32> {
  ^bb0(%a: tensor<4x3xf32>):
    %1 = nn.layer "inner"(%a) : (tensor<4x3xf32>) -> tensor<4x2xf32> {
    ^bb0(%b: tensor<4x3xf32>):
      %w = nn.param @w : tensor<3x2xf32>
      %y = nn.linear %b, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
      %r = nn.relu %y : tensor<4x2xf32>
      nn.yield %r : tensor<4x2xf32>
    }
    %t = nn.tanh %1 : tensor<4x2xf32>
    nn.yield %t : tensor<4x2xf32>
  }
  return %0 : tensor<4x2xf32>
}
