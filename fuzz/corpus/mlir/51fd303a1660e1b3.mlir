func.func @negative_cast_other_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  %c = nn.cast %x : tensor<4xf32> -> tensor<4xf16>
  return %c : tensor<4xf16>
}
