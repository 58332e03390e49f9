// A reshape that cuts the batch of 8 into 2 x 4 across two dims mixes
// samples.

module @reshape_splits_batch_across_dims {
  func.func @forward(%x: tensor<8x6xf32>) -> tensor<2x24xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.reshape' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x6xf32>'): the result 'tensor<2x24xf32>' does not keep the batch of 8 whole within one dim}}
    %r = nn.reshape %x : tensor<8x6xf32> -> tensor<2x24xf32>
    return %r : tensor<2x24xf32>
  }
}
