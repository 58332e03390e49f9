// A three-layer MLP on one micro-batch with its loss. The partitioner puts
// the two heavy layers apart; each stage gets a forward and a backward
// function and a declaration; the last stage takes the labels and its
// backward seeds the loss gradient with 1/M. Stage 0's input is the data, so
// its backward does not compute the input's gradient.

nn.parameter @w0 : tensor<64x16xf32> init normal(2.0e-02)
nn.parameter @w1 : tensor<64x64xf32> init normal(2.0e-02)
nn.parameter @w2 : tensor<10x64xf32> init normal(2.0e-02)


// BALANCE-LABEL: func.func @train_s0_fwd
// BALANCE:         nn.layer "l0"
// BALANCE-NOT:     nn.layer
// BALANCE:       func.func @train_s1_fwd
// BALANCE:         nn.layer "l1"
// BALANCE:         nn.layer "l2"
func.func @forward(%x: tensor<4x16xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %0 = nn.layer "l0"(%x) : (tensor<4x16xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %w = nn.param @w0 : tensor<64x16xf32>
    %h = nn.linear %a, %w {transpose_weight = true} : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
    %r = nn.relu %h : tensor<4x64xf32>
    nn.yield %r : tensor<4x64xf32>
  }
  %1 = nn.layer "l1"(%0) : (tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %w = nn.param @w1 : tensor<64x64xf32>
    %h = nn.linear %a, %w {transpose_weight = true} : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
    %r = nn.relu %h : tensor<4x64xf32>
    nn.yield %r : tensor<4x64xf32>
  }
  %2 = nn.layer "l2"(%1) : (tensor<4x64xf32>) -> tensor<4x10xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %w = nn.param @w2 : tensor<10x64xf32>
    %h = nn.linear %a, %w {transpose_weight = true} : (tensor<4x64xf32>, tensor<10x64xf32>) -> tensor<4x10xf32>
    nn.yield %h : tensor<4x10xf32>
  }
  %loss = nn.cross_entropy %2, %labels : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
