func.func @layer_norm_grad_param_grad_types(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %dy: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm_grad' op expected scale and bias gradients of type 'tensor<32xf32>', got 'tensor<32xf32>' and 'tensor<16x32xf32>'}}
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<16x32xf32>)
  return %dx : tensor<2x16x32xf32>
}
