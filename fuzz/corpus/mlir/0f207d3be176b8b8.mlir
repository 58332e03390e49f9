func.func @cross_entropy_grad_result_type(%l: tensor<2x32xf32>, %y: tensor<2xi64>, %d: tensor<f32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'nn.cross_entropy_grad' op expected result type 'tensor<2x32xf32>', got 'tensor<2x16xf32>'}}
  %g = nn.cross_entropy_grad %l, %y, %d : (tensor<2x32xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x16xf32>
  return %g : tensor<2x16xf32>
}
