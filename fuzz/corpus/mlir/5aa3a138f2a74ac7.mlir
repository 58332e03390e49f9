func.func @mse_loss_element_type(%p: tensor<8x10xf32>, %t: tensor<8x10xf32>) -> tensor<f64> {
  // expected-error @+1 {{'nn.mse' op expected input and loss of one element type, got 'f32' and 'f64'}}
  %c = nn.mse %p, %t : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f64>
  return %c : tensor<f64>
}
