func.func @mse_type_mismatch(%p: tensor<8x10xf32>, %t: tensor<8x9xf32>) -> tensor<f32> {
  // expected-error @+1 {{'nn.mse' op expected input and target of one type, got 'tensor<8x10xf32>' and 'tensor<8x9xf32>'}}
  %c = nn.mse %p, %t : (tensor<8x10xf32>, tensor<8x9xf32>) -> tensor<f32>
  return %c : tensor<f32>
}
