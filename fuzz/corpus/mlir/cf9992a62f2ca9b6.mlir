// (0.5 * x) * (1 + erf(x / sqrt2)) with the half on the left and the erf term
// operands swapped; the GELU of an f16 tensor.
func.func @gelu_half_first_commuted_f16(%x: tensor<8x32xf16>) -> tensor<8x32xf16> {
  %sqrt2 = nn.constant dense<1.414> : tensor<f16>
  %one = nn.constant dense<1.0> : tensor<f16>
  %half = nn.constant dense<0.5> : tensor<f16>
  %h = nn.mul %half, %x : (tensor<f16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  %d = nn.div %x, %sqrt2 : (tensor<8x32xf16>, tensor<f16>) -> tensor<8x32xf16>
  %e = nn.erf %d : tensor<8x32xf16>
  %a = nn.add %one, %e : (tensor<f16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  %g = nn.mul %a, %h : (tensor<8x32xf16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  return %g : tensor<8x32xf16>
}
