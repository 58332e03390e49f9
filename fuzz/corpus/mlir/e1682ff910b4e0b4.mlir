module @arguments_disagree_on_batch {
  // expected-error @+1 {{argument 1 has batch 4 but argument 0 has batch 8}}
  func.func @forward(%x: tensor<8x4xf32>, %labels: tensor<4xi64>) -> tensor<8x4xf32> {
    return %x : tensor<8x4xf32>
  }
}
