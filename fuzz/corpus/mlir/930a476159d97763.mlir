func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x5xf16>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.concat' op expected inputs and result of one element type, got 'f16' and 'f32'}}
  %c = nn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf16>) -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}
