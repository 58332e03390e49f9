func.func @constant() -> (tensor<f32>, tensor<2xi64>, tensor<2xi1>) {
  %f = nn.constant dense<0.5> : tensor<f32>
  %i = nn.constant dense<[1, 2]> : tensor<2xi64>
  %b = nn.constant dense<[true, false]> : tensor<2xi1>
  return %f, %i, %b : tensor<f32>, tensor<2xi64>, tensor<2xi1>
}
