func.func @negative_gemm_2d_c_stays_gemm(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %c: tensor<8x32xf32>, %r: tensor<1x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %y = nn.gemm %x, %w, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %z = nn.gemm %x, %w, %r : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<1x32xf32>) -> tensor<8x32xf32>
  return %y, %z : tensor<8x32xf32>, tensor<8x32xf32>
}
