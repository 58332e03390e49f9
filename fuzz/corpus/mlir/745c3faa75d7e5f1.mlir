// Every commutative operand swapped: 0.5 * ((1 + erf((1/sqrt2) * x)) * x).
func.func @gelu_commuted_operands(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %rsqrt2 = nn.constant dense<0.707106769> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.mul %rsqrt2, %x : (tensor<f32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = nn.erf %d : tensor<8x32xf32>
  %a = nn.add %one, %e : (tensor<f32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = nn.mul %a, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = nn.mul %half, %m : (tensor<f32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}
