func.func @cast(%m: tensor<4x4xi1>, %x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xi64>, tensor<4x4xf16>) {
  %f = nn.cast %m : tensor<4x4xi1> -> tensor<4x4xf32>
  %i = nn.cast %x : tensor<4x4xf32> -> tensor<4x4xi64>
  %h = nn.cast %x : tensor<4x4xf32> -> tensor<4x4xf16>
  return %f, %i, %h : tensor<4x4xf32>, tensor<4x4xi64>, tensor<4x4xf16>
}
