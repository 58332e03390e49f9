func.func @fold_cast_same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = nn.cast %x : tensor<4xf32> -> tensor<4xf32>
  return %c : tensor<4xf32>
}
