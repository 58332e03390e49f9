func.func @linear_bias_2d(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected linear bias of shape [32], got [8, 32]}}
  %r = nn.linear %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
