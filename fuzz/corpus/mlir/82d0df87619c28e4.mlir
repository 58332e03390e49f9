// A broadcasting 0.5 that widens the result is not an elementwise GELU of x.
func.func @negative_gelu_broadcast_widens(%x: tensor<32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<4x32xf32>
  %d = nn.div %x, %sqrt2 : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
  %e = nn.erf %d : tensor<32xf32>
  %a = nn.add %e, %one : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
  %m = nn.mul %x, %a : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %g = nn.mul %m, %half : (tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %g : tensor<4x32xf32>
}
