func.func @linear_weight_3d(%x: tensor<8x16xf32>, %w: tensor<2x16x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected linear input of rank >= 1 and a 2-D weight, got [8, 16] and [2, 16, 32]}}
  %r = nn.linear %x, %w : (tensor<8x16xf32>, tensor<2x16x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
