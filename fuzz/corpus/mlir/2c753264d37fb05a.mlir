// A parameter with the batch size is per-position, not per-sample.

module @batch_sized_parameter {
  nn.parameter @p : tensor<8x2xf32> init zeros
  func.func @forward(%x: tensor<8x2xf32>) -> tensor<8x2xf32> {
    %p = nn.param @p : tensor<8x2xf32>
    // expected-error @+1 {{cannot micro-batch: operand #0 of 'nn.mul' of type 'tensor<8x2xf32>' has size 8 in dim 0, where the batch is, but does not carry the batch: it does not come from the arguments}}
    %a = nn.mul %p, %x : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
    return %a : tensor<8x2xf32>
  }
}
