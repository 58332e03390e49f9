// A scalar addend broadcasts over every feature but is not a bias [out].
func.func @negative_add_scalar_stays_add(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %s: tensor<f32>) -> tensor<8x32xf32> {
  %l = nn.linear %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %y = nn.add %l, %s : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
