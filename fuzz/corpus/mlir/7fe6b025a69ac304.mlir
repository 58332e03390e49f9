func.func @softmax_grad(%y: tensor<2x4x16x16xf32>, %dy: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %dx = nn.softmax_grad %y, %dy {axis = 3} : tensor<2x4x16x16xf32>
  return %dx : tensor<2x4x16x16xf32>
}
