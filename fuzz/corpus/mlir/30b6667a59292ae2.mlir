func.func @linear_bias_wrong_size(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected linear bias of shape [32], got [16]}}
  %r = nn.linear %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
