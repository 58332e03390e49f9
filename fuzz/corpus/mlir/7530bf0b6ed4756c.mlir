func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> (tensor<2x11xf32>, tensor<2x3xf32>) {
  %c = nn.concat %a, %b, %a {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %d = nn.concat %a {axis = 0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %c, %d : tensor<2x11xf32>, tensor<2x3xf32>
}
