// The gpt_mha form: [T, B, H*hd] -> [T, B*H, hd] puts the batch outermost in
// dim 1 (size B*H = 16 becomes (B/M)*H = 4); [T, B*H, hd] -> [T*B, H*hd]
// makes it an inner factor of dim 0 (T outer: 4*8 = 32 becomes 4*2 = 8),
// which a row-wise linear keeps apart; [T*B, E] -> [T, B, E] splits it out
// again.

module @reshape_batch_merged_with_heads {
  nn.parameter @w : tensor<6x6xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x4x6xf32>) -> tensor<8x4x6xf32> {
    %w = nn.param @w : tensor<6x6xf32>
    %t = nn.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<8x4x6xf32> -> tensor<4x8x6xf32>
    %h = nn.reshape %t : tensor<4x8x6xf32> -> tensor<4x16x3xf32>
    %s = nn.softmax %h {axis = 2} : tensor<4x16x3xf32> -> tensor<4x16x3xf32>
    %r = nn.reshape %s : tensor<4x16x3xf32> -> tensor<32x6xf32>
    %l = nn.linear %r, %w : (tensor<32x6xf32>, tensor<6x6xf32>) -> tensor<32x6xf32>
    %u = nn.reshape %l : tensor<32x6xf32> -> tensor<4x8x6xf32>
    %y = nn.transpose %u {perm = array<i64: 1, 0, 2>} : tensor<4x8x6xf32> -> tensor<8x4x6xf32>
    return %y : tensor<8x4x6xf32>
  }
}
