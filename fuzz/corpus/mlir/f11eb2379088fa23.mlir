func.func @matmul_batch_mismatch(%a: tensor<2x8x16xf32>, %b: tensor<3x16x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'nn.matmul' op matmul batch dimensions [2] and [3] of [2, 8, 16] and [3, 16, 4] are not broadcast-compatible}}
  %r = nn.matmul %a, %b : (tensor<2x8x16xf32>, tensor<3x16x4xf32>) -> tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}
