func.func @softmax_result_type(%x: tensor<4x8xf32>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'nn.softmax' op expected result type 'tensor<4x8xf32>', got 'tensor<4x8xf16>'}}
  %r = nn.softmax %x {axis = 1} : tensor<4x8xf32> -> tensor<4x8xf16>
  return %r : tensor<4x8xf16>
}
