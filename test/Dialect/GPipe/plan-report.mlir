// RUN: gpipe-opt %s --gpipe-schedule --gpipe-plan-memory --gpipe-plan-report -o /dev/null | FileCheck %s
// RUN: gpipe-opt %s --gpipe-schedule --gpipe-plan-memory '--gpipe-plan-report=file=%t.txt' -o /dev/null
// RUN: FileCheck %s < %t.txt
// RUN: gpipe-opt %s --gpipe-schedule=schedule=1f1b --gpipe-plan-memory=optimizer=adam --gpipe-plan-report -o /dev/null | FileCheck %s --check-prefix=ONEF
// RUN: sed 's/forward_time = 2.0e-03 : f64, backward_time = 4.0e-03/forward_time = 1.0e-03 : f64, backward_time = 2.0e-03/' %s | gpipe-opt --gpipe-schedule --gpipe-plan-report -o /dev/null | FileCheck %s --check-prefix=UNIFORM
// RUN: gpipe-opt %s --gpipe-plan-report -o /dev/null | FileCheck %s --check-prefix=UNSCHEDULED
// RUN: not gpipe-opt %s '--gpipe-plan-report=pipeline=nope' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPIPELINE
// RUN: gpipe-import --preset gpt --depth 4 --width 32 --heads 4 --seq-len 8 --batch 8 --vocab 16 | gpipe-opt --gpipe-pipeline="stages=3 microbatches=4 balance=2,1,4" --gpipe-plan-memory --gpipe-plan-report -o /dev/null | FileCheck %s --check-prefix=GPT
// RUN: gpipe-import --preset gpt --depth 8 --width 64 --heads 4 --seq-len 32 --batch 32 | gpipe-opt --gpipe-pipeline="stages=4 microbatches=8 schedule=v-half remat=none" --gpipe-plan-report -o /dev/null | FileCheck %s --check-prefix=VHALF
// RUN: gpipe-import --preset gpt --depth 8 --width 64 --heads 4 --seq-len 32 --batch 32 | gpipe-opt --gpipe-pipeline="stages=4 microbatches=8 schedule=v-min remat=none" --gpipe-plan-report -o /dev/null | FileCheck %s --check-prefix=VMIN

// gpipe-plan-report prints the plan of the pipeline: the stage table, the
// layers of each stage, the simulated schedule with its bubble next to the
// closed form (K-1)/(M+K-1), and the memory plan of gpipe-plan-memory. The
// memory numbers are those worked out in plan-memory.mlir. GPipe, K = 2,
// M = 2 with stage 0 twice as slow as stage 1: rank 0 runs F0 [0, 2],
// F1 [2, 4], B0 [7, 11], B1 [11, 15] (ms); rank 1 F0 [2, 3], F1 [4, 5],
// B0 [5, 7], B1 [7, 9]. Step time 15 ms, busy 12 and 6 ms: bubble
// 1 - 18 / 30 = 40%.

// CHECK:      pipeline @train: 2 stages on 2 ranks, 2 micro-batches, schedule gpipe, remat stage
// CHECK-NEXT: stage  rank  layers  forward  backward  parameters   rank peak memory
// CHECK-NEXT:     0     0       0  2 ms     4 ms      128 (512 B)  2.2 KiB
// CHECK-NEXT:     1     1       0  1 ms     2 ms      32 (128 B)   960 B
// CHECK-NEXT: layers of stage 0: (none)
// CHECK-NEXT: layers of stage 1: (none)
// CHECK-NEXT: schedule gpipe: step time 15 ms predicted, busy rank 0 80.0%, rank 1 40.0%
// CHECK-NEXT: bubble: 40.0% predicted, 33.3% closed form (K-1)/(M+K-1) = 1/3
// CHECK-NEXT: micro-batches of activations kept per stage: 2, 2 (of M = 2)
// CHECK-NEXT: memory per rank (optimizer sgd, 64-byte aligned buffers):
// CHECK-NEXT:   rank 0: peak 2.2 KiB (2304 B) at 0B0, arena 2.2 KiB (2304 B) +0.0%; params 512 B, grads 512 B, optimizer 0 B, kept activations 512 B, scratch 640 B, send/recv 128 B
// CHECK-NEXT:   rank 1: peak 960 B at 1B0, arena 1.0 KiB (1024 B) +6.7%; params 128 B, grads 128 B, optimizer 0 B, kept activations 320 B, scratch 256 B, send/recv 128 B

// 1F1B: rank 1 runs F0 B0 F1 B1 and keeps one micro-batch; the sends and
// receives are placed with the stages' own times (stage 1 is twice as fast
// as stage 0), so micro-batch 1 arrives after B0 and no receive buffer waits
// at rank 1's peak. Adam adds two moments per parameter byte.
// ONEF:      schedule 1f1b: step time 13 ms predicted
// ONEF:      micro-batches of activations kept per stage: 2, 1 (of M = 2)
// ONEF-NEXT: memory per rank (optimizer adam, 64-byte aligned buffers):
// ONEF-NEXT:   rank 0: peak 3.2 KiB (3328 B) at 0B0, {{.*}} optimizer 1.0 KiB, kept activations 512 B,
// ONEF-NEXT:   rank 1: peak 1.0 KiB (1056 B) at 1B0, {{.*}} optimizer 256 B, kept activations 160 B, scratch 256 B, send/recv 128 B

// Identical stages: the prediction is the closed form.
// UNIFORM: bubble: 33.3% predicted, 33.3% closed form (K-1)/(M+K-1) = 1/3
// UNIFORM: memory: not planned (run gpipe-plan-memory)

// UNSCHEDULED:      pipeline @train: 2 stages, 2 micro-batches, schedule gpipe, remat stage
// UNSCHEDULED-NEXT: stage  rank  layers  forward  backward  parameters   rank peak memory
// UNSCHEDULED-NEXT:     0     -       0  2 ms     4 ms      128 (512 B)  -
// UNSCHEDULED:      schedule: none yet (run gpipe-schedule); bubble 33.3% closed form (K-1)/(M+K-1) = 1/3
// UNSCHEDULED-NEXT: memory: not planned (run gpipe-plan-memory)

// NOPIPELINE: error: expected one pipeline named @nope, found 0

// The GPT preset cut 2, 1, 4: layer names and counts per stage.
// GPT:      pipeline @train: 3 stages on 3 ranks, 4 micro-batches, schedule gpipe, remat stage
// GPT-NEXT: stage  rank  layers  forward
// GPT-NEXT:     0     0       2  {{.*}}  13,472 (52.6 KiB)
// GPT-NEXT:     1     1       1  {{.*}}  12,704 (49.6 KiB)
// GPT-NEXT:     2     2       4  {{.*}}  25,984 (101.5 KiB)
// GPT-NEXT: layers of stage 0: tok_emb, blocks.0
// GPT-NEXT: layers of stage 1: blocks.1
// GPT-NEXT: layers of stage 2: blocks.2, blocks.3, ln_f, head
// GPT:      bubble: {{[0-9.]+}}% predicted, 33.3% closed form (K-1)/(M+K-1) = 2/6
// GPT-NEXT: micro-batches of activations kept per stage: 4, 4, 4 (of M = 4)
// GPT-NEXT: sends: 1 of 4 send slots buffered (staging copies, at most 2.0 KiB per rank), the others rendezvous
// GPT-NEXT: memory per rank (optimizer sgd, 64-byte aligned buffers):
// GPT-NEXT:   rank 0: peak
// GPT-NEXT:   rank 1: peak
// GPT-NEXT:   rank 2: peak

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
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0 {forward_time = 2.0e-03 : f64, backward_time = 4.0e-03 : f64}
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 {forward_time = 1.0e-03 : f64, backward_time = 2.0e-03 : f64}
gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
}

// V-Half and V-Min beside 1F1B: the planned kept activations of the rank
// that keeps the most against 1F1B's first rank on as many ranks (K = 4
// micro-batches of a rank's even share of every stage's kept bytes): about
// a half and a third.
// VHALF: kept activations at the peak, largest rank: 1.9 MiB; 1F1B on these ranks: 4.1 MiB (4 micro-batches of 1.0 MiB, a rank's even share), 0.47 of it
// VMIN: kept activations at the peak, largest rank: 1.5 MiB; 1F1B on these ranks: 4.1 MiB (4 micro-batches of 1.0 MiB, a rank's even share), 0.37 of it
