// [B, T, H*hd] -> [B, T, H, hd] and back, as gpt.onnx and the gpt preset
// split heads; the batch stays dim 0.

module @reshape_split_heads {
  func.func @forward(%x: tensor<8x4x6xf32>) -> tensor<8x4x6xf32> {
    %r = nn.reshape %x : tensor<8x4x6xf32> -> tensor<8x4x2x3xf32>
    %e = nn.exp %r : tensor<8x4x2x3xf32>
    %y = nn.reshape %e : tensor<8x4x2x3xf32> -> tensor<8x4x6xf32>
    return %y : tensor<8x4x6xf32>
  }
}
