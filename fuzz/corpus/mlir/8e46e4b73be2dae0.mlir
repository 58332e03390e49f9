// Near miss: x / 2 instead of x / sqrt2 (the 0.5 * x + ... form stays too).
func.func @negative_gelu_wrong_divisor(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %two = nn.constant dense<2.0> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %x, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %m = nn.mul %x, %a : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = nn.mul %m, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}
