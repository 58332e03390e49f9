func.func @reshape_transpose_unsqueeze(%x: tensor<2x6xf32>) -> tensor<1x3x2x2xf32> attributes {nn.differentiate} {
  %r = nn.reshape %x : tensor<2x6xf32> -> tensor<2x3x2xf32>
  %t = nn.transpose %r {perm = array<i64: 1, 2, 0>} : tensor<2x3x2xf32> -> tensor<3x2x2xf32>
  %u = nn.unsqueeze %t {axes = array<i64: 0>} : tensor<3x2x2xf32> -> tensor<1x3x2x2xf32>
  return %u : tensor<1x3x2x2xf32>
}

// A piece without a gradient contributes zeros to the concatenation.
func.func @split(%x: tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x3xf32>) attributes {nn.differentiate} {
  %a, %b, %c = nn.split %x {axis = 1, sizes = array<i64: 1, 2, 3>} : tensor<2x6xf32> -> tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>
  return %a, %c : tensor<2x1xf32>, tensor<2x3xf32>
}

func.func @slice(%x: tensor<2x6xf32>) -> tensor<2x2xf32> attributes {nn.differentiate} {
  %s = nn.slice %x {offsets = array<i64: 0, 1>, sizes = array<i64: 2, 2>, strides = array<i64: 1, 3>} : tensor<2x6xf32> -> tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}

func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x4xf32> attributes {nn.differentiate} {
  %c = nn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}
