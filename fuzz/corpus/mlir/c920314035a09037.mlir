//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

func.func @broadcast_mismatch(%a: tensor<4x3xf32>, %b: tensor<4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'nn.add' op operand shapes [4, 3] and [4] are not broadcast-compatible}}
  %r = nn.add %a, %b : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}
