func.func @concat_result_shape(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x9xf32> {
  // expected-error @+1 {{'nn.concat' op expected result shape [2, 8] but the result type has shape [2, 9]}}
  %c = nn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x9xf32>
  return %c : tensor<2x9xf32>
}
