// A language model's logits [batch, seq, vocab] take token labels
// [batch, seq]; the network's layers are left as they are and the loss
// follows the last one.


// MSE-LABEL: func.func @forward
// MSE-SAME:    (%[[IDS:.*]]: tensor<2x4xi64>, %[[TARGET:.*]]: tensor<2x4x11xf32>) -> tensor<f32>
// MSE:         nn.mse %{{.*}}, %[[TARGET]] : (tensor<2x4x11xf32>, tensor<2x4x11xf32>) -> tensor<f32>
nn.parameter @"emb.weight" : tensor<11x8xf32> init normal(2.0e-02)
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x11xf32> {
  %h = nn.layer "head" (%ids) : (tensor<2x4xi64>) -> tensor<2x4x11xf32> {
  ^bb0(%a: tensor<2x4xi64>):
    %e = nn.param @"emb.weight" : tensor<11x8xf32>
    %g = nn.gather %e, %a {axis = 0} : (tensor<11x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    %l = nn.linear %g, %e {transpose_weight = true} : (tensor<2x4x8xf32>, tensor<11x8xf32>) -> tensor<2x4x11xf32>
    nn.yield %l : tensor<2x4x11xf32>
  }
  return %h : tensor<2x4x11xf32>
}
