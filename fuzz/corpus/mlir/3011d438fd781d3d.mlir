// Fusion patterns (gemm/matmul/bias add -> nn.linear, erf GELU -> nn.gelu),
// the cases they must leave alone, and the folders.

//===----------------------------------------------------------------------===//
// nn.gemm -> nn.linear
//===----------------------------------------------------------------------===//

func.func @gemm_trans_b_bias_to_linear(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
