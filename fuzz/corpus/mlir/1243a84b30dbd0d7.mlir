func.func @where_value_element_types(%m: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.where' op expected select values of one element type, got 'f32' and 'f16'}}
  %r = nn.where %m, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
