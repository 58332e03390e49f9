// nn-raise-fused-ops applies the fusion patterns on their own.

func.func @raise_matmul_bias_to_linear(%x: tensor<2x16x32xf32>, %w: tensor<32x96xf32>, %b: tensor<96xf32>) -> tensor<2x16x96xf32> {
  %m = nn.matmul %x, %w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
  %y = nn.add %b, %m : (tensor<96xf32>, tensor<2x16x96xf32>) -> tensor<2x16x96xf32>
  return %y : tensor<2x16x96xf32>
}
