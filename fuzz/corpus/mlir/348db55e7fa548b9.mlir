// x^T x contracts over the samples.

module @matmul_contracts_batch {
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<16x16xf32> {
    %xt = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.matmul' mixes samples along the batch dimension (dim 1 of operand #0 of type 'tensor<16x8xf32>')}}
    %g = nn.matmul %xt, %x : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
    return %g : tensor<16x16xf32>
  }
}
