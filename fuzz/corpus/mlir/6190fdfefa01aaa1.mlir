//===----------------------------------------------------------------------===//
// Reductions and slice insertion
//===----------------------------------------------------------------------===//

func.func @reduce_sum(%x: tensor<2x16x96xf32>) -> (tensor<96xf32>, tensor<2x1x96xf32>, tensor<f32>, tensor<2x16x96xf32>) {
  %s = nn.reduce_sum %x {axes = array<i64: 0, 1>} : tensor<2x16x96xf32> -> tensor<96xf32>
  %k = nn.reduce_sum %x {axes = array<i64: 1>, keep_dims = true} : tensor<2x16x96xf32> -> tensor<2x1x96xf32>
  %a = nn.reduce_sum %x {axes = array<i64: 0, 1, 2>} : tensor<2x16x96xf32> -> tensor<f32>
  %n = nn.reduce_sum %x {axes = array<i64>} : tensor<2x16x96xf32> -> tensor<2x16x96xf32>
  return %s, %k, %a, %n : tensor<96xf32>, tensor<2x1x96xf32>, tensor<f32>, tensor<2x16x96xf32>
}
