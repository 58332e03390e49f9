// [3, B] -> [B, 3]: each row of the result holds elements of several
// samples (the batch would be an inner factor not aligned to a dim).

module @reshape_batch_inner_misaligned {
  func.func @forward(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
    %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x3xf32> -> tensor<3x8xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.reshape' mixes samples along the batch dimension (dim 1 of operand #0 of type 'tensor<3x8xf32>'): the result 'tensor<8x3xf32>' does not keep the batch of 8 whole within one dim}}
    %r = nn.reshape %t : tensor<3x8xf32> -> tensor<8x3xf32>
    return %r : tensor<8x3xf32>
  }
}
