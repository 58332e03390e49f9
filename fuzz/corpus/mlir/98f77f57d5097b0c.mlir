// Gather (embedding): the indices carry the batch into the result.

module @gather_embedding {
  nn.parameter @table : tensor<10x6xf32> init normal(2.0e-02)
  func.func @forward(%ids: tensor<8x5xi64>) -> tensor<8x5x6xf32> {
    %t = nn.param @table : tensor<10x6xf32>
    %e = nn.gather %t, %ids {axis = 0} : (tensor<10x6xf32>, tensor<8x5xi64>) -> tensor<8x5x6xf32>
    return %e : tensor<8x5x6xf32>
  }
}
