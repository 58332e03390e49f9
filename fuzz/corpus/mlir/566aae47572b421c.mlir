module @slice_takes_part_of_batch {
  func.func @forward(%x: tensor<8x12xf32>) -> tensor<4x12xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.slice' takes part of the batch dimension (dim 0 of operand #0 of type 'tensor<8x12xf32>')}}
    %s = nn.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 12>, strides = array<i64: 1, 1>} : tensor<8x12xf32> -> tensor<4x12xf32>
    return %s : tensor<4x12xf32>
  }
}
