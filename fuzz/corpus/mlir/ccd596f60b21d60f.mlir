func.func @concat_axis_out_of_range(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.concat' op axis 2 is out of range for shape [2, 3]}}
  %c = nn.concat %a, %b {axis = 2} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}
