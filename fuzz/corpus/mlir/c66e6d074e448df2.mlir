func.func @matmul_batched_broadcast(%a: tensor<2x1x16x8xf32>, %b: tensor<4x8x16xf32>, %w: tensor<8x32xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x1x16x32xf32>) {
  %r = nn.matmul %a, %b : (tensor<2x1x16x8xf32>, tensor<4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %l = nn.matmul %a, %w : (tensor<2x1x16x8xf32>, tensor<8x32xf32>) -> tensor<2x1x16x32xf32>
  return %r, %l : tensor<2x4x16x16xf32>, tensor<2x1x16x32xf32>
}
