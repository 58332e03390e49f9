// Adding a tensor to its transpose pairs sample i with feature i.

module @batch_in_two_dims {
  func.func @forward(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.add' mixes samples along the batch dimension (dim 1 of operand #1 of type 'tensor<8x8xf32>')}}
    %a = nn.add %x, %t : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    return %a : tensor<8x8xf32>
  }
}
