// The bias-less linear has a second use: fusing would compute it twice.
func.func @negative_add_bias_linear_two_uses(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %l = nn.linear %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %y = nn.add %l, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y, %l : tensor<8x32xf32>, tensor<8x32xf32>
}
