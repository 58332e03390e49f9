module @scalar_argument {
  // expected-error @+1 {{cannot micro-batch argument 1 of type 'tensor<f32>': expected a statically shaped tensor with the batch in dim 0}}
  func.func @forward(%x: tensor<8x4xf32>, %s: tensor<f32>) -> tensor<8x4xf32> {
    return %x : tensor<8x4xf32>
  }
}
