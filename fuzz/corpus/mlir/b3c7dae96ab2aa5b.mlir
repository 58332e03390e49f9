func.func @layer_norm_scale_shape(%x: tensor<2x16x32xf32>, %g: tensor<16xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op expected layer_norm scale of shape [32], got [16]}}
  %r = nn.layer_norm %x, %g {axis = 2} : (tensor<2x16x32xf32>, tensor<16xf32>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}
