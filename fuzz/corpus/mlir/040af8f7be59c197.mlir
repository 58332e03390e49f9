//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

func.func @softmax_axis_out_of_range(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.softmax' op axis 2 is out of range for shape [4, 8]}}
  %r = nn.softmax %x {axis = 2} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
