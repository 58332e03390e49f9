func.func @layer_norm_bias_shape(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %b: tensor<16xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op expected layer_norm bias of shape [32], got [16]}}
  %r = nn.layer_norm %x, %g, %b {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<16xf32>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}
