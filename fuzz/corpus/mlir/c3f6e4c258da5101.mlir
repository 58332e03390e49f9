//===----------------------------------------------------------------------===//
// Erf GELU -> nn.gelu
//===----------------------------------------------------------------------===//

// The order torch.onnx writes: mul(mul(x, add(erf(div(x, sqrt2)), 1)), 0.5).
func.func @gelu_exporter_order(%x: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %x, %sqrt2 : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %e = nn.erf %d : tensor<2x16x64xf32>
  %a = nn.add %e, %one : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %m = nn.mul %x, %a : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %g = nn.mul %m, %half : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  return %g : tensor<2x16x64xf32>
}
