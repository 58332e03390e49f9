// mul(mul(x, 0.5), add(erf(x / sqrt2), 1)).
func.func @gelu_half_first(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %h = nn.mul %x, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %d = nn.div %x, %sqrt2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %g = nn.mul %h, %a : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}
