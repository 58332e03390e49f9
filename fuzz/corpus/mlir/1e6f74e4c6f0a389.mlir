// Near miss: erf of y / sqrt2 multiplied by x.
func.func @negative_gelu_erf_of_other_value(%x: tensor<8x32xf32>, %y: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %y, %sqrt2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %m = nn.mul %x, %a : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = nn.mul %m, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}
