module @split_along_batch {
  func.func @forward(%x: tensor<8x12xf32>) -> tensor<4x12xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.split' splits the batch dimension (dim 0 of operand #0 of type 'tensor<8x12xf32>')}}
    %p:2 = nn.split %x {axis = 0, sizes = array<i64: 4, 4>} : tensor<8x12xf32> -> tensor<4x12xf32>, tensor<4x12xf32>
    return %p#0 : tensor<4x12xf32>
  }
}
