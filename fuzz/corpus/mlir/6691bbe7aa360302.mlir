func.func @equal_where(%a: tensor<4x4xi64>, %b: tensor<i64>, %x: tensor<2x4x4xf32>, %y: tensor<f32>) -> tensor<2x4x4xf32> {
  %m = nn.equal %a, %b : (tensor<4x4xi64>, tensor<i64>) -> tensor<4x4xi1>
  %r = nn.where %m, %x, %y : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  return %r : tensor<2x4x4xf32>
}
