func.func @layer_norm_axis_out_of_range(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op axis 3 is out of range for shape [2, 16, 32]}}
  %r = nn.layer_norm %x, %g {axis = 3} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}
