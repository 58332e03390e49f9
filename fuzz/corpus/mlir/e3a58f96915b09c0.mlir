func.func @gemm(%x: tensor<8x16xf32>, %xt: tensor<16x8xf32>, %w: tensor<32x16xf32>, %wt: tensor<16x32xf32>, %b: tensor<32xf32>, %c: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %g0 = nn.gemm %x, %wt : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %g1 = nn.gemm %x, %w, %b {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %g2 = nn.gemm %xt, %wt, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = true} : (tensor<16x8xf32>, tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g3 = nn.gemm %xt, %w {trans_a = true, trans_b = true} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return %g0, %g1, %g2, %g3 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}
