//===----------------------------------------------------------------------===//
// Gradient kernels
//===----------------------------------------------------------------------===//

func.func @gather_grad(%ids: tensor<2x16xi64>, %dy: tensor<2x16x64xf32>, %i32: tensor<3xi32>, %dc: tensor<32x3xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
  %t = nn.gather_grad %ids, %dy {axis = 0} : (tensor<2x16xi64>, tensor<2x16x64xf32>) -> tensor<32x64xf32>
  %c = nn.gather_grad %i32, %dc {axis = 1} : (tensor<3xi32>, tensor<32x3xf32>) -> tensor<32x64xf32>
  return %t, %c : tensor<32x64xf32>, tensor<32x64xf32>
}
