// A parameter read in two layers (a tied embedding and output head) gets one
// gradient: the contributions are added in reverse op order, the head's
// first, then the embedding's scatter-add.

nn.parameter @"emb.weight" : tensor<10x4xf32> init normal(2.0e-02)

func.func @tied_embedding(%ids: tensor<2x3xi64>, %labels: tensor<2x3xi64>) -> tensor<f32> attributes {nn.differentiate} {
  %h = nn.layer "emb" (%ids) : (tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  ^bb0(%a: tensor<2x3xi64>):
    %e = nn.param @"emb.weight" : tensor<10x4xf32>
    %g = nn.gather %e, %a {axis = 0} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %t = nn.tanh %g : tensor<2x3x4xf32>
    nn.yield %t : tensor<2x3x4xf32>
  }
  %loss = nn.layer "head" (%h, %labels) : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<f32> {
  ^bb0(%a: tensor<2x3x4xf32>, %y: tensor<2x3xi64>):
    %e = nn.param @"emb.weight" : tensor<10x4xf32>
    %logits = nn.linear %a, %e {transpose_weight = true} : (tensor<2x3x4xf32>, tensor<10x4xf32>) -> tensor<2x3x10xf32>
    %l = nn.cross_entropy %logits, %y : (tensor<2x3x10xf32>, tensor<2x3xi64>) -> tensor<f32>
    nn.yield %l : tensor<f32>
  }
  return %loss : tensor<f32>
}
