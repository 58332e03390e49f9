// Gathering rows of a batch-carrying tensor along its batch dim picks among
// samples.

module @gather_along_batch {
  func.func @forward(%x: tensor<8x6xf32>, %ids: tensor<8x3xi64>) -> tensor<8x3x6xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.gather' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x6xf32>')}}
    %e = nn.gather %x, %ids {axis = 0} : (tensor<8x6xf32>, tensor<8x3xi64>) -> tensor<8x3x6xf32>
    return %e : tensor<8x3x6xf32>
  }
}
