//===----------------------------------------------------------------------===//
// nn.matmul -> nn.linear
//===----------------------------------------------------------------------===//

func.func @matmul_2d_rhs_to_linear(%x: tensor<2x16x32xf32>, %w: tensor<32x96xf32>) -> tensor<2x16x96xf32> {
  %y = nn.matmul %x, %w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
  return %y : tensor<2x16x96xf32>
}
