func.func @layer_norm_result_type(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) -> tensor<2x16x32xf16> {
  // expected-error @+1 {{'nn.layer_norm' op expected result type 'tensor<2x16x32xf32>', got 'tensor<2x16x32xf16>'}}
  %r = nn.layer_norm %x, %g {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf16>
  return %r : tensor<2x16x32xf16>
}
