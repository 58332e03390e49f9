func.func @matmul_rank_1(%a: tensor<16xf32>, %b: tensor<16x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.matmul' op expected matmul operands of rank >= 2, got [16] and [16, 4]}}
  %r = nn.matmul %a, %b : (tensor<16xf32>, tensor<16x4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
