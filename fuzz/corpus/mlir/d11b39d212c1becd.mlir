module @batch_not_divisible {
  // expected-error @+1 {{batch 6 of argument 0 is not divisible by 4 micro-batches}}
  func.func @forward(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
    return %x : tensor<6x4xf32>
  }
}
