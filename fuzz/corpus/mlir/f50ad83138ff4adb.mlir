//===----------------------------------------------------------------------===//
// Indexing and shapes
//===----------------------------------------------------------------------===//

func.func @gather(%t: tensor<32x64xf32>, %ids: tensor<2x16xi64>, %i32: tensor<3xi32>) -> (tensor<2x16x64xf32>, tensor<32x3xf32>) {
  %e = nn.gather %t, %ids {axis = 0} : (tensor<32x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %c = nn.gather %t, %i32 {axis = 1} : (tensor<32x64xf32>, tensor<3xi32>) -> tensor<32x3xf32>
  return %e, %c : tensor<2x16x64xf32>, tensor<32x3xf32>
}
