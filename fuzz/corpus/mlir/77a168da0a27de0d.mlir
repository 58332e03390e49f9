// Layers: the batch flows into the bodies through the block arguments and
// out through nn.yield; constants inside stay. The loss layer takes the
// labels.

module @layer_bodies {
  nn.parameter @"0.weight" : tensor<10x16xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
    %0 = nn.layer "0" (%x) : (tensor<8x16xf32>) -> tensor<8x10xf32> {
    ^bb0(%a: tensor<8x16xf32>):
      %c = nn.constant dense<2.0> : tensor<f32>
      %w = nn.param @"0.weight" : tensor<10x16xf32>
      %y = nn.linear %a, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x10xf32>
      %s = nn.mul %y, %c : (tensor<8x10xf32>, tensor<f32>) -> tensor<8x10xf32>
      nn.yield %s : tensor<8x10xf32>
    }
    %1 = nn.layer "loss" (%0, %labels) : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> {
    ^bb0(%p: tensor<8x10xf32>, %t: tensor<8xi64>):
      %l = nn.cross_entropy %p, %t : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
      nn.yield %l : tensor<f32>
    }
    return %1 : tensor<f32>
  }
}
