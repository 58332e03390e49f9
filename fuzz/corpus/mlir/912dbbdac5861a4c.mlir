// x x^T pairs every sample with every other.

module @matmul_outer_product_of_batch {
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x8xf32> {
    %xt = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.matmul' mixes samples along the batch dimension (dim 1 of operand #1 of type 'tensor<16x8xf32>')}}
    %g = nn.matmul %x, %xt : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    return %g : tensor<8x8xf32>
  }
}
