// Reverse mode through every op family. Each function marked
// `nn.differentiate` gets `<name>_bwd(inputs..., result seeds...) ->
// (float input grads..., param grads...)` right after it; the body recomputes
// the forward ops the gradients need, then applies the VJPs in reverse order.

//===----------------------------------------------------------------------===//
// Binary elementwise ops: broadcast operands get reduced gradients
//===----------------------------------------------------------------------===//

func.func @add_broadcast(%x: tensor<4x3xf32>, %b: tensor<3xf32>, %c: tensor<4x1xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = nn.add %y, %c : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}
