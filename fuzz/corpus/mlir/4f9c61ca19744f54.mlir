func.func @concat_shape_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.concat' op concat inputs [2, 3] and [3, 5] differ outside axis 1}}
  %c = nn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}
