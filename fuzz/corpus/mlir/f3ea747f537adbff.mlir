//===----------------------------------------------------------------------===//
// Reductions and slice insertion in a forward function
//===----------------------------------------------------------------------===//

func.func @reduce_sum(%x: tensor<2x3xf32>) -> tensor<3xf32> attributes {nn.differentiate} {
  %y = nn.reduce_sum %x {axes = array<i64: 0>} : tensor<2x3xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}

func.func @insert_slice(%s: tensor<2x2xf32>, %d: tensor<2x6xf32>) -> tensor<2x6xf32> attributes {nn.differentiate} {
  %y = nn.insert_slice %s into %d {offsets = array<i64: 0, 1>, strides = array<i64: 1, 3>} : tensor<2x2xf32> into tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}
