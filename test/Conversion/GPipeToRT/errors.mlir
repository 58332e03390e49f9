// convert-gpipe-to-rt needs a scheduled, memory-planned pipeline whose
// recorded plan holds what its functions need (the lowering reads the plan,
// it does not make one); the hand-written two-stage pipeline of
// plan-memory.mlir lowers once planned.
// RUN: split-file %s %t
// RUN: not gpipe-opt %t/two-stages.mlir --gpipe-schedule --convert-gpipe-to-rt 2>&1 | FileCheck %s --check-prefix=UNPLANNED
// UNPLANNED: error: pipeline @train has no memory plan; run gpipe-plan-memory (or gpipe-pipeline) first
// RUN: gpipe-opt %t/two-stages.mlir --gpipe-schedule --gpipe-plan-memory --convert-gpipe-to-rt | FileCheck %s --check-prefix=LOWERED
// LOWERED: func.func @gpipe_model_rank_0
// LOWERED: func.func @gpipe_model_rank_1
// A stale plan (a scratch slot smaller than a function's working set, a
// slot missing) is refused.
// RUN: gpipe-opt %t/two-stages.mlir --gpipe-schedule --gpipe-plan-memory | sed 's/<scratch stage -1 at 1536 size 256/<scratch stage -1 at 1536 size 128/' | not gpipe-opt --convert-gpipe-to-rt 2>&1 | FileCheck %s --check-prefix=STALE
// STALE: error: rank 0: @b0 needs 256 scratch bytes, the memory plan's scratch slot holds 128; re-run gpipe-plan-memory
// RUN: gpipe-opt %t/two-stages.mlir --gpipe-schedule --gpipe-plan-memory | sed 's/, <output_grad stage 0 at 1792 size 128 x 1 stride 128>//' | not gpipe-opt --convert-gpipe-to-rt 2>&1 | FileCheck %s --check-prefix=NOSLOT
// NOSLOT: error: rank 0 (RECV_B of stage 0): the memory plan has no transfer slot
// A program without an arena.
// RUN: gpipe-opt %t/two-stages.mlir --gpipe-schedule --gpipe-plan-memory | sed 's/gpipe.program rank 1 arena <.*> {/gpipe.program rank 1 {/' | not gpipe-opt --convert-gpipe-to-rt 2>&1 | FileCheck %s --check-prefix=NOARENA
// NOARENA: error: rank 1 has no arena; re-run gpipe-plan-memory
// A backward that does not say which results are parameter gradients.
// RUN: sed 's/, nn.param_grads = \[@w1\]//' %t/two-stages.mlir | gpipe-opt --gpipe-schedule --gpipe-plan-memory | not gpipe-opt --convert-gpipe-to-rt 2>&1 | FileCheck %s --check-prefix=GRADS
// GRADS: error: @b1 returns 2 results but lists no nn.param_grads for the 1 after its input gradient
// No pipeline at all.
// RUN: not gpipe-opt %t/empty.mlir --convert-gpipe-to-rt 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: error: {{.*}}pipeline

//--- two-stages.mlir
nn.parameter @w0 : tensor<16x8xf32> init zeros
nn.parameter @w1 : tensor<8x4xf32> init zeros

func.func @f0(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %w = nn.param @w0 : tensor<16x8xf32>
  %h = nn.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %y = nn.relu %h : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func @b0(%x: tensor<4x16xf32>, %dy: tensor<4x8xf32>) -> tensor<16x8xf32> attributes {nn.input_grads = array<i64>, nn.param_grads = [@w0]} {
  %w = nn.param @w0 : tensor<16x8xf32>
  %h = nn.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %dh = nn.mul %dy, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dw = nn.gemm %x, %dh {trans_a = true} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  return %dw : tensor<16x8xf32>
}
func.func @f1(%h: tensor<4x8xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %w = nn.param @w1 : tensor<8x4xf32>
  %z = nn.matmul %h, %w : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %l = nn.cross_entropy %z, %labels : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func @b1(%h: tensor<4x8xf32>, %labels: tensor<4xi64>, %dl: tensor<f32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) attributes {nn.input_grads = array<i64: 0>, nn.param_grads = [@w1]} {
  %w = nn.param @w1 : tensor<8x4xf32>
  %z = nn.matmul %h, %w : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %dz = nn.cross_entropy_grad %z, %labels, %dl : (tensor<4x4xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x4xf32>
  %dh = nn.linear %dz, %w {transpose_weight = true} : (tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<4x8xf32>
  %dw = nn.gemm %h, %dz {trans_a = true} : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return %dh, %dw : tensor<4x8xf32>, tensor<8x4xf32>
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
}


//--- empty.mlir
module {}
