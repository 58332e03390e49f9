//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

func.func @fold_reshape_same_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = nn.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
