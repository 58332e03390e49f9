func.func @layer_norm_scale_element_type(%x: tensor<2x16x32xf32>, %g: tensor<32xf16>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op expected input and scale of one element type, got 'f32' and 'f16'}}
  %r = nn.layer_norm %x, %g {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf16>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}
