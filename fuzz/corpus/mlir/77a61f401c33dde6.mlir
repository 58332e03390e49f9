// The training objective: a trailing labels argument (batch in dim 0 too)
// and a scalar loss, now the mean over the micro-batch.

module @cross_entropy_with_labels {
  nn.parameter @w : tensor<10x16xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
    %w = nn.param @w : tensor<10x16xf32>
    %y = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x10xf32>
    %l = nn.cross_entropy %y, %labels : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
