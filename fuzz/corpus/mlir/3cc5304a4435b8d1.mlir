module @batch_sized_constant_slices_differ {
  func.func @forward(%x: tensor<8x2xf32>) -> tensor<8x2xf32> {
    %c = nn.constant dense<[[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 2.0]]> : tensor<8x2xf32>
    // expected-error @+1 {{cannot micro-batch: operand #1 of 'nn.add' of type 'tensor<8x2xf32>' has size 8 in dim 0, where the batch is, but does not carry the batch: its slices along the batch differ}}
    %a = nn.add %x, %c : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
    return %a : tensor<8x2xf32>
  }
}
