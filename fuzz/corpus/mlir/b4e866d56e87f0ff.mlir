func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<16x32xf32>) -> tensor<f32> {
  // expected-error @+1 {{'nn.linear' op expected linear input of rank >= 1 and a 2-D weight, got [] and [16, 32]}}
  %r = nn.linear %x, %w : (tensor<f32>, tensor<16x32xf32>) -> tensor<f32>
  return %r : tensor<f32>
}
