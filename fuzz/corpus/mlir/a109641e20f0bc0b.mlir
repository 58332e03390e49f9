func.func @layer_norm_scale_rank(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op expected layer_norm scale of shape [16, 32], got [32]}}
  %r = nn.layer_norm %x, %g {axis = 1} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}
