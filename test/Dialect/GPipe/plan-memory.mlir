// RUN: split-file %s %t
// RUN: gpipe-opt %t/two-stages.mlir --gpipe-schedule --gpipe-plan-memory | FileCheck %s
// RUN: gpipe-opt %t/two-stages.mlir --gpipe-schedule '--gpipe-plan-memory=optimizer=adam alignment=1' | FileCheck %s --check-prefix=ADAM
// RUN: sed 's/remat stage/remat none/' %t/two-stages.mlir | gpipe-opt --gpipe-schedule --gpipe-plan-memory | FileCheck %s --check-prefix=NONE
// RUN: not gpipe-opt %t/two-stages.mlir --gpipe-schedule '--gpipe-plan-memory=memory-budget=2KiB' 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: gpipe-opt %t/two-stages.mlir --gpipe-schedule '--gpipe-plan-memory=memory-budget=2304' | FileCheck %s --check-prefix=FITS
// RUN: not gpipe-opt %t/two-stages.mlir --gpipe-plan-memory 2>&1 | FileCheck %s --check-prefix=UNSCHEDULED
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=optimizer=lamb' 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=memory-budget=lots' 2>&1 | FileCheck %s --check-prefix=BADBUDGET
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=alignment=48' 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: gpipe-opt %t/declared.mlir --gpipe-schedule --gpipe-plan-memory 2>&1 | FileCheck %s --check-prefix=DECLARED
// RUN: gpipe-import %inputs/mlp.onnx | gpipe-opt --gpipe-pipeline="stages=4 microbatches=8 schedule=gpipe" --gpipe-plan-memory | FileCheck %s --check-prefix=MLP-GPIPE
// RUN: gpipe-import %inputs/mlp.onnx | gpipe-opt --gpipe-pipeline="stages=4 microbatches=8 schedule=1f1b" --gpipe-plan-memory | FileCheck %s --check-prefix=MLP-1F1B

// gpipe-plan-memory on a hand-written K = 2, M = 2 GPipe pipeline, every
// number worked out by hand (64-byte alignment unless said otherwise).
//
// Stage sizes. @s0: parameters @w0 512 B; input tensor<4x16xf32> 256 B;
// output tensor<4x8xf32> 128 B. Forward @f0: %h (128 B) live at points 1-2,
// %y is the output (own buffer): scratch 128. Backward @b0: %h 128 [1,2],
// %dh 128 [2,3], %dw 512 [3,4] (a parameter gradient, live to the return):
// scratch 128 + 512 = 640.
// @s1 (last): parameters @w1 128 B; input 128 B; labels tensor<4xi64> 32 B
// (extra input); the loss has no buffer of its own. Forward @f1: %z 64
// [1,2], the loss 4 [2,3]: scratch 64 + 64 (every value of a function's
// scratch region is aligned: the code generator places them at these
// offsets) = 128. Backward @b1: %z 64 [1,2], %dz 64 [2,4], %dh is the input
// gradient (own buffer), %dw 128 [4,5]: 192 at point 4, plus the loss
// seed's aligned slot: 256.
//
// Rank 0 (sgd: params + grads 1024 B): 0F0 1536, 0SEND_F0 1408, 0F1 1792,
// 0SEND_F1 1664, 0RECV_B0 1664, 0B0 1024 + 2 inputs 512 + output gradient
// 128 + scratch 640 = 2304, ... Everything is a multiple of 64: arena 2304.
// Rank 1 (params + grads 256 B): 1B0 = 256 + 2 x (input 128 + labels 32) +
// input gradient 128 + scratch 256 = 960; aligned (labels 64): 1024.

// CHECK:      gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule gpipe remat stage attributes {gpipe.memory_plan = {alignment = 64 : i64, arena_bytes = 2304 : i64, kept_microbatches = array<i64: 2, 2>, optimizer = "sgd", peak_bytes = 2304 : i64, stages = [{backward_scratch = 640 : i64, extra_input = 0 : i64, forward_scratch = 128 : i64, input = 256 : i64, output = 128 : i64, params = 512 : i64, saved = 0 : i64}, {backward_scratch = 256 : i64, extra_input = 32 : i64, forward_scratch = 128 : i64, input = 128 : i64, output = 0 : i64, params = 128 : i64, saved = 0 : i64}]}} {
// CHECK-NEXT:   gpipe.program rank 0 attributes {arena_bytes = 2304 : i64, peak_at = "0B0", peak_breakdown = {boundary = 128 : i64, grads = 512 : i64, kept = 512 : i64, optimizer = 0 : i64, params = 512 : i64, scratch = 640 : i64}, peak_bytes = 2304 : i64} {
// CHECK:        gpipe.program rank 1 attributes {arena_bytes = 1024 : i64, peak_at = "1B0", peak_breakdown = {boundary = 128 : i64, grads = 128 : i64, kept = 320 : i64, optimizer = 0 : i64, params = 128 : i64, scratch = 256 : i64}, peak_bytes = 960 : i64} {

// Adam keeps two moments per parameter byte; with byte alignment the arena
// is the exact peak.
// ADAM: gpipe.program rank 0 attributes {arena_bytes = 3328 : i64, peak_at = "0B0", peak_breakdown = {boundary = 128 : i64, grads = 512 : i64, kept = 512 : i64, optimizer = 1024 : i64, params = 512 : i64, scratch = 640 : i64}, peak_bytes = 3328 : i64} {
// ADAM: gpipe.program rank 1 attributes {arena_bytes = 1156 : i64, peak_at = "1B0", peak_breakdown = {boundary = 128 : i64, grads = 128 : i64, kept = 320 : i64, optimizer = 256 : i64, params = 128 : i64, scratch = 196 : i64}, peak_bytes = 1156 : i64} {

// remat none: each micro-batch also keeps everything its forward defines
// (@f0: %h and %y, 256 B; @f1: %z and the loss, 68 B) until its backward,
// whose working set then counts only gradient values (the same here).
// NONE: saved = 256 : i64}, {{.*}} saved = 68 : i64}]
// NONE: gpipe.program rank 0 attributes {arena_bytes = 2816 : i64, peak_at = "0B0", peak_breakdown = {boundary = 128 : i64, grads = 512 : i64, kept = 1024 : i64, optimizer = 0 : i64, params = 512 : i64, scratch = 640 : i64}, peak_bytes = 2816 : i64} {
// NONE: gpipe.program rank 1 attributes {{{.*}}kept = 456 : i64{{.*}}peak_bytes = 1096 : i64} {

// BUDGET: error: pipeline @train rank 0 (stage 0) needs 2.2 KiB (2304 bytes) of memory, over the memory budget of 2.0 KiB (2048 bytes)
// BUDGET-NEXT: gpipe.pipeline @train
// BUDGET: note: its arena holds a peak of 2.2 KiB (2304 bytes) live at action 5 (0B0): parameters 512 B, gradients 512 B, optimizer state 0 B, kept activations 512 B, scratch 640 B, send/receive buffers 128 B
// BUDGET-NOT: rank 1

// FITS: gpipe.memory_plan = {alignment = 64 : i64, arena_bytes = 2304 : i64, budget_bytes = 2304 : i64,

// UNSCHEDULED: error: pipeline @train has no programs to plan; run gpipe-schedule or gpipe-import-schedule first
// OPTIMIZER: for the --optimizer option: unknown optimizer 'lamb' (expected sgd, momentum or adam)
// BADBUDGET: error: gpipe-plan-memory: cannot read memory budget 'lots' (expected a size such as 16GiB)
// ALIGN: error: gpipe-plan-memory: alignment 48 is not a power of two

// Declared functions have no body to walk: a warning, and no working set.
// DECLARED: warning: stage @d0: @g0, @h0 have no body; the memory plan counts no working set for them
// DECLARED: forward_scratch = 0 : i64

// The shipped MLP with K = 4, M = 8: GPipe keeps all 8 micro-batches of
// activations on every stage, 1F1B at most K - k on stage k.
// MLP-GPIPE: kept_microbatches = array<i64: 8, 8, 8, 8>
// MLP-1F1B: kept_microbatches = array<i64: 4, 3, 2, 1>

//--- two-stages.mlir
nn.parameter @w0 : tensor<16x8xf32> {init = "zeros"}
nn.parameter @w1 : tensor<8x4xf32> {init = "zeros"}

func.func @f0(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %w = nn.param @w0 : tensor<16x8xf32>
  %h = nn.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %y = nn.relu %h : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func @b0(%x: tensor<4x16xf32>, %dy: tensor<4x8xf32>) -> tensor<16x8xf32> {
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
func.func @b1(%h: tensor<4x8xf32>, %labels: tensor<4xi64>, %dl: tensor<f32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
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

//--- declared.mlir
func.func private @g0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @h0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
gpipe.stage @d0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @g0 backward @h0
gpipe.pipeline @decl stages [@d0] microbatches 1 schedule gpipe remat stage {
}
