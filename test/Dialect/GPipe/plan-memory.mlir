// RUN: split-file %s %t
// RUN: gpipe-opt %t/two-stages.mlir --gpipe-plan-memory | FileCheck %s
// RUN: gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=optimizer=adam alignment=1' | FileCheck %s --check-prefix=ADAM
// RUN: sed 's/remat stage/remat none/' %t/two-stages.mlir | gpipe-opt --gpipe-plan-memory | FileCheck %s --check-prefix=NONE
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=memory-budget=2KiB' 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=memory-budget=2304' | FileCheck %s --check-prefix=FITS
// RUN: not gpipe-opt %t/unscheduled.mlir --gpipe-plan-memory 2>&1 | FileCheck %s --check-prefix=UNSCHEDULED
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=optimizer=lamb' 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=optimizer=adamw alignment=1' | FileCheck %s --check-prefix=ADAM
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=optimizer=Adam' 2>&1 | FileCheck %s --check-prefix=OPTIMIZER-CASE
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=memory-budget=lots' 2>&1 | FileCheck %s --check-prefix=BADBUDGET
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=memory-budget=' 2>&1 | FileCheck %s --check-prefix=EMPTYBUDGET
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=alignment=48' 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: gpipe-opt %t/declared.mlir --gpipe-schedule --gpipe-plan-memory 2>&1 | FileCheck %s --check-prefix=DECLARED
// RUN: gpipe-import %inputs/mlp.onnx | gpipe-opt --gpipe-pipeline="stages=4 microbatches=8 schedule=gpipe" --gpipe-plan-memory | FileCheck %s --check-prefix=MLP-GPIPE
// RUN: gpipe-import %inputs/mlp.onnx | gpipe-opt --gpipe-pipeline="stages=4 microbatches=8 schedule=1f1b" --gpipe-plan-memory | FileCheck %s --check-prefix=MLP-1F1B
// RUN: gpipe-import --preset gpt --depth 14 --width 64 --heads 4 --seq-len 32 --batch 16 | gpipe-opt --gpipe-pipeline="stages=2 microbatches=8 schedule=interleaved-1f1b remat=none" | FileCheck %s --check-prefix=STAGED
// RUN: gpipe-import --preset gpt --depth 14 --width 64 --heads 4 --seq-len 32 --batch 16 | gpipe-opt --gpipe-pipeline="stages=2 microbatches=8 schedule=interleaved-1f1b remat=none send-buffers=0" | FileCheck %s --check-prefix=RENDEZVOUS
// RUN: not gpipe-opt %t/two-stages.mlir '--gpipe-plan-memory=send-buffers=-1' 2>&1 | FileCheck %s --check-prefix=NEGATIVE-COPIES

// gpipe-plan-memory on a hand-written, scheduled K = 2, M = 2 GPipe pipeline
// (the programs gpipe-schedule makes of it, checked in), every
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
// Slots. Buffers of one kind and stage share a slot of as many copies as
// are live at once (micro-batch m in copy m mod count): two kept inputs per
// stage here; the send buffer of the forwards and the receive buffer of the
// gradients live at different times and share bytes 2176-2303 of rank 0;
// every working set of a rank shares one scratch slot (stage -1) of the
// largest (640 B on rank 0). The peak is exact; the arena holds the slots.
//
// Rank 0 (sgd: params + grads 1024 B): 0F0 1536, 0SEND_F0 1408, 0F1 1792,
// 0SEND_F1 1664, 0RECV_B0 1664, 0B0 1024 + 2 inputs 512 + output gradient
// 128 + scratch 640 = 2304, ... Everything is a multiple of 64: arena 2304.
// Rank 1 (params + grads 256 B): 1B0 = 256 + 2 x (input 128 + labels 32) +
// input gradient 128 + scratch 256 = 960; aligned (labels 64): 1024.

// CHECK:      gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule gpipe remat stage memory_plan <optimizer = sgd, alignment = 64, budget = 0, peak = 2304, arena = 2304, kept = [2, 2]> {
// CHECK-NEXT:   gpipe.program rank 0 arena <size = 2304, peak = 2304, peak_at = 5, breakdown = <params = 512, grads = 512, optimizer = 0, kept = 512, scratch = 640, boundary = 128>, slots = [<params stage 0 at 0 size 512 x 1 stride 512>, <grads stage 0 at 512 size 512 x 1 stride 512>, <input stage 0 at 1664 size 256 x 2 stride 256>, <output stage 0 at 2176 size 128 x 1 stride 128>, <scratch stage -1 at 1024 size 640 x 1 stride 640>, <output_grad stage 0 at 2176 size 128 x 1 stride 128>]> {
// CHECK:        gpipe.program rank 1 arena <size = 1024, peak = 960, peak_at = 4, breakdown = <params = 128, grads = 128, optimizer = 0, kept = 320, scratch = 256, boundary = 128>, slots = [<params stage 1 at 0 size 128 x 1 stride 128>, <grads stage 1 at 128 size 128 x 1 stride 128>, <input stage 1 at 256 size 128 x 2 stride 128>, <extra stage 1 at 768 size 32 x 2 stride 64>, <scratch stage -1 at 512 size 256 x 1 stride 256>, <input_grad stage 1 at 896 size 128 x 1 stride 128>]> {

// Adam keeps two moments per parameter byte; with byte alignment the arena
// is the exact peak.
// ADAM: gpipe.program rank 0 arena <size = 3328, peak = 3328, peak_at = 5, breakdown = <params = 512, grads = 512, optimizer = 1024, kept = 512, scratch = 640, boundary = 128>
// ADAM: gpipe.program rank 1 arena <size = 1156, peak = 1156, peak_at = 4, breakdown = <params = 128, grads = 128, optimizer = 256, kept = 320, scratch = 196, boundary = 128>

// remat none: each micro-batch also keeps everything its forward defines
// (@f0: %h and %y, 256 B; @f1: %z and the loss, 68 B) until its backward,
// whose working set then counts only gradient values (the same here).
// NONE: memory_plan <optimizer = sgd, alignment = 64, budget = 0, peak = 2816, arena = 2816, kept = [2, 2]>
// NONE: gpipe.program rank 0 arena <size = 2816, peak = 2816, peak_at = 5, breakdown = <params = 512, grads = 512, optimizer = 0, kept = 1024, scratch = 640, boundary = 128>, slots = [{{.*}}<saved stage 0 at 2176 size 256 x 2 stride 256>
// NONE: gpipe.program rank 1 arena <size = 1280, peak = 1096, peak_at = 4, breakdown = <{{.*}}kept = 456{{.*}}<saved stage 1 at 512 size 68 x 2 stride 128>

// BUDGET: error: pipeline @train rank 0 (stage 0) needs 2.2 KiB (2304 bytes) of memory, over the memory budget of 2.0 KiB (2048 bytes)
// BUDGET-NEXT: gpipe.pipeline @train
// BUDGET: note: its arena holds a peak of 2.2 KiB (2304 bytes) live at action 5 (0B0): parameters 512 B, gradients 512 B, optimizer state 0 B, kept activations 512 B, scratch 640 B, send/receive buffers 128 B
// BUDGET-NOT: rank 1

// FITS: memory_plan <optimizer = sgd, alignment = 64, budget = 2304, peak = 2304, arena = 2304, kept = [2, 2]>

// UNSCHEDULED: error: pipeline @train has no programs to plan; run gpipe-schedule or gpipe-import-schedule first
// OPTIMIZER: for the --optimizer option: unknown optimizer 'lamb' (expected sgd, momentum or adam)
// Names are case-sensitive; the aliases (adamw) are accepted.
// OPTIMIZER-CASE: for the --optimizer option: unknown optimizer 'Adam' (expected sgd, momentum or adam)
// BADBUDGET: error: gpipe-plan-memory: cannot read memory budget 'lots' (expected a size such as 16GiB)
// EMPTYBUDGET: error: gpipe-plan-memory: empty memory budget; give a size such as 512MiB or leave the option out
// ALIGN: error: gpipe-plan-memory: alignment 48 is not a power of two

// Declared functions have no body to walk: a warning, and no working set.
// DECLARED: warning: stage @d0: @g0, @h0 have no body; the memory plan counts no working set for them
// DECLARED: gpipe.program rank 0 arena <size = 256, peak = 256, peak_at = 0, breakdown = <params = 0, grads = 0, optimizer = 0, kept = 256, scratch = 0, boundary = 0>, slots = [<input stage 0 at 0 size 256 x 1 stride 256>]>

// The shipped MLP with K = 4, M = 8: GPipe keeps all 8 micro-batches of
// activations on every stage, 1F1B at most K - k on stage k.
// MLP-GPIPE: kept = [8, 8, 8, 8]
// MLP-1F1B: kept = [4, 3, 2, 1]

//--- two-stages.mlir
nn.parameter @w0 : tensor<16x8xf32> init zeros
nn.parameter @w1 : tensor<8x4xf32> init zeros

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
  gpipe.program rank 0 {
    gpipe.for %mb = 0 to 2 {
      gpipe.forward @s0 mb %mb
      gpipe.send @s0 mb %mb forward to 1 : tensor<4x8xf32>
    }
    gpipe.for %mb = 0 to 2 {
      gpipe.recv @s0 mb %mb backward from 1 : tensor<4x8xf32>
      gpipe.backward @s0 mb %mb
    }
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    gpipe.for %mb = 0 to 2 {
      gpipe.recv @s1 mb %mb forward from 0 : tensor<4x8xf32>
      gpipe.forward @s1 mb %mb
    }
    gpipe.for %mb = 0 to 2 {
      gpipe.backward @s1 mb %mb
      gpipe.send @s1 mb %mb backward to 0 : tensor<4x8xf32>
    }
    gpipe.step @s1
  }
}

//--- unscheduled.mlir
nn.parameter @w0 : tensor<16x8xf32> init zeros
nn.parameter @w1 : tensor<8x4xf32> init zeros

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

// Buffered sends. Interleaved 1F1B at K = 2 waits on its rendezvous (the
// simulated step is a fifth longer without copies): gpipe-plan-memory gives
// send slots one staging copy each, a 16 KiB boundary activation, planned
// per rank like any other buffer. With send-buffers=0 none.
// STAGED-DAG: <staged_output stage 0 at {{[0-9]+}} size 16384 x 1 stride 16384>
// STAGED-DAG: <staged_input_grad stage 2 at {{[0-9]+}} size 16384 x 1 stride 16384>
// RENDEZVOUS: gpipe.pipeline
// RENDEZVOUS-NOT: staged_
// NEGATIVE-COPIES: error: gpipe-plan-memory: send-buffers -1 is negative (0: every transfer a rendezvous)

