module @result_batch_not_in_dim_0 {
  func.func @forward(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
    %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
    // expected-error @+1 {{cannot micro-batch: result #0 of type 'tensor<4x8xf32>' does not carry the batch as the outermost factor of dim 0 (it is in dim 1)}}
    return %t : tensor<4x8xf32>
  }
}
