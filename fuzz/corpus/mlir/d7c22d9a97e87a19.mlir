module @softmax_over_classes {
  func.func @forward(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
    %p = nn.softmax %x {axis = 1} : tensor<8x10xf32> -> tensor<8x10xf32>
    return %p : tensor<8x10xf32>
  }
}
