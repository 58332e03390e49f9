// A [8, 32] addend is a residual, not a bias.
func.func @negative_add_full_tensor_stays_add(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %r: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %l = nn.linear %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %y = nn.add %l, %r : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
