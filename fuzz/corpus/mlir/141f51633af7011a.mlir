//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

func.func @softmax(%s: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %p = nn.softmax %s {axis = 3} : tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
  return %p : tensor<2x4x16x16xf32>
}
