// remat=none keeps every activation the backward reads instead of
// recomputing it: each stage forward returns, after its output, the values
// its backward's VJPs read (threaded out of the nn.layer ops as extra
// results), and the backward takes them between the forward's arguments and
// the output gradient. Both carry nn.saved_count; no forward op (linear)
// is left in a backward, only the VJPs. The memory planner keeps exactly the
// saved values per micro-batch: the 4x64 ReLU on stage 0 (1 KiB); the 4x64
// ReLU and the 4x10 logits on stage 1 (1024 + 160 bytes).

// PLAN: gpipe.program rank 0 arena <{{.*}}<saved stage 0 at {{[0-9]+}} size 1024 x
// PLAN: gpipe.program rank 1 arena <{{.*}}<saved stage 1 at {{[0-9]+}} size 1184 x

nn.parameter @w0 : tensor<64x16xf32> init normal(2.0e-02)
nn.parameter @w1 : tensor<64x64xf32> init normal(2.0e-02)
nn.parameter @w2 : tensor<10x64xf32> init normal(2.0e-02)

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
