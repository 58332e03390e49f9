//===----------------------------------------------------------------------===//
// Gradient kernels
//===----------------------------------------------------------------------===//

func.func @gather_grad_shape(%ids: tensor<2x16xi64>, %dy: tensor<2x16x32xf32>) -> tensor<32x64xf32> {
  // expected-error @+1 {{'nn.gather_grad' op expected gradient shape [2, 16, 64] (the gather of [32, 64] by indices [2, 16] along axis 0), got [2, 16, 32]}}
  %t = nn.gather_grad %ids, %dy {axis = 0} : (tensor<2x16xi64>, tensor<2x16x32xf32>) -> tensor<32x64xf32>
  return %t : tensor<32x64xf32>
}
