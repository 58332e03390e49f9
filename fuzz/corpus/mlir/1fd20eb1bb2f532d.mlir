func.func @layer_norm_grad_scale_shape(%x: tensor<2x16x32xf32>, %g: tensor<16xf32>, %dy: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm_grad' op expected layer_norm scale of shape [32], got [16]}}
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy {axis = 2} : (tensor<2x16x32xf32>, tensor<16xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<16xf32>, tensor<16xf32>)
  return %dx : tensor<2x16x32xf32>
}
