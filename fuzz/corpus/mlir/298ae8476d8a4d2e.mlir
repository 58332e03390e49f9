module @concat_along_batch {
  func.func @forward(%x: tensor<8x12xf32>) -> tensor<16x12xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.concat' concatenates along the batch dimension (dim 0 of operand #0 of type 'tensor<8x12xf32>')}}
    %c = nn.concat %x, %x {axis = 0} : (tensor<8x12xf32>, tensor<8x12xf32>) -> tensor<16x12xf32>
    return %c : tensor<16x12xf32>
  }
}
