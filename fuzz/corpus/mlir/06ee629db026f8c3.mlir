func.func @binary_wrong_result_shape(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'nn.sub' op expected result shape [4, 3] but the result type has shape [4, 4]}}
  %r = nn.sub %a, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
