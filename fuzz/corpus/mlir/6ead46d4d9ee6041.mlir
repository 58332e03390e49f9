func.func @log(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %l = nn.log %x : tensor<4x8xf32>
  return %l : tensor<4x8xf32>
}
