func.func @where_broadcast_mismatch(%m: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.where' op operand shapes [3] and [4] and [4] are not broadcast-compatible}}
  %r = nn.where %m, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
