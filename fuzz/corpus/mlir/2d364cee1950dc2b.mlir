//===----------------------------------------------------------------------===//
// A layered MLP, parameter gradients and loss scaling
//===----------------------------------------------------------------------===//

// The layers are inlined: the backward recomputes the forward flat, then
// runs reverse mode. Parameter gradients follow the first-read order of the
// parameters. With loss-scale=0.25 the seed is scaled once, at the loss.

nn.parameter @"0.weight" : tensor<5x4xf32> init normal(2.0e-02)
nn.parameter @"0.bias" : tensor<5xf32> init zeros
nn.parameter @"2.weight" : tensor<3x5xf32> init normal(2.0e-02)


// SCALE-LABEL: func.func @mlp_bwd
// SCALE-SAME:    (%{{.*}}: tensor<2x4xf32>, %[[LABELS:.*]]: tensor<2xi64>, %[[DL:.*]]: tensor<f32>)
// SCALE-SAME:    attributes {nn.input_grads = array<i64: 0>, nn.loss_scale = 2.500000e-01 : f64, nn.param_grads = [@"0.weight", @"0.bias", @"2.weight"]}
// SCALE:         %[[Y:.*]] = nn.linear %{{.*}}, %{{.*}} {transpose_weight = true} : (tensor<2x5xf32>, tensor<3x5xf32>) -> tensor<2x3xf32>
// SCALE-NEXT:    %[[S:.*]] = nn.constant dense<2.500000e-01> : tensor<f32>
// SCALE-NEXT:    %[[SEED:.*]] = nn.mul %[[DL]], %[[S]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// SCALE-NEXT:    nn.cross_entropy_grad %[[Y]], %[[LABELS]], %[[SEED]]
// SCALE-NOT:     nn.constant dense<2.500000e-01>
// SCALE:         return
func.func @mlp(%x: tensor<2x4xf32>, %labels: tensor<2xi64>) -> tensor<f32> attributes {nn.differentiate} {
  %h = nn.layer "0" (%x) : (tensor<2x4xf32>) -> tensor<2x5xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    %w = nn.param @"0.weight" : tensor<5x4xf32>
    %b = nn.param @"0.bias" : tensor<5xf32>
    %l = nn.linear %a, %w, %b {transpose_weight = true} : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x5xf32>
    %r = nn.relu %l : tensor<2x5xf32>
    nn.yield %r : tensor<2x5xf32>
  }
  %loss = nn.layer "2" (%h, %labels) : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32> {
  ^bb0(%a: tensor<2x5xf32>, %y: tensor<2xi64>):
    %w = nn.param @"2.weight" : tensor<3x5xf32>
    %l = nn.linear %a, %w {transpose_weight = true} : (tensor<2x5xf32>, tensor<3x5xf32>) -> tensor<2x3xf32>
    %c = nn.cross_entropy %l, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
    nn.yield %c : tensor<f32>
  }
  return %loss : tensor<f32>
}
