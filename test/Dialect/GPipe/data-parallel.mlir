// RUN: gpipe-import --preset mlp --depth 3 --width 8 --in-features 8 --classes 4 --batch 8 | gpipe-opt --gpipe-pipeline="stages=2 microbatches=2 data-parallel=2 schedule=zb-h1" | FileCheck %s
// RUN: gpipe-import --preset mlp --depth 3 --width 8 --in-features 8 --classes 4 --batch 8 | gpipe-opt --gpipe-pipeline="stages=2 microbatches=2 data-parallel=2 schedule=1f1b" '--gpipe-export-trace=svg=%t.svg' | FileCheck %s --check-prefix=FUSED
// RUN: FileCheck %s --check-prefix=SVG < %t.svg
// RUN: gpipe-opt %s --split-input-file --verify-diagnostics

// Two replicas of a 2-rank pipeline, 2 micro-batches each: the batch of 8
// is split into 2 x 2 micro-batches of 2, and each micro-batch's mean loss
// is scaled by 1/(M x D) = 1/4 in the backward's seed. Each stage's
// all-reduce time is the cost model's; a reduce_grad follows each stage's
// last backward piece (the last W of a split backward) and precedes its
// step. The plan gives it a Reduce slot of (D-1) x ceil(n/D) floats: stage
// 0 has 144 gradients (576 bytes), so 72 floats (288 bytes); stage 1 108,
// so 54 (216 bytes).

// CHECK-LABEL: func.func @train_s0_fwd(%{{.*}}: tensor<2x8xf32>)
// CHECK:       gpipe.stage @train_s0 index 0 : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-SAME:    reduce_time = {{[0-9.eE+-]+}} : f64
// CHECK:       nn.constant dense<2.500000e-01> : tensor<f32>
// CHECK:       gpipe.pipeline @train stages [@train_s0, @train_s1] microbatches 2 schedule "zb-h1" remat stage data_parallel 2
// CHECK:       gpipe.program rank 0
// CHECK-SAME:    <reduce stage 0 at {{[0-9]+}} size 288 x 1 stride 320>
// CHECK:           gpipe.backward_input @train_s0 mb %mb
// CHECK-NEXT:      gpipe.backward_weight @train_s0 mb %mb
// CHECK-NEXT:    }
// CHECK-NEXT:    gpipe.reduce_grad @train_s0
// CHECK-NEXT:    gpipe.step @train_s0
// CHECK:       gpipe.program rank 1
// CHECK-SAME:    <reduce stage 1 at {{[0-9]+}} size 216 x 1 stride 256>
// CHECK:           gpipe.backward_weight @train_s1 mb %mb
// CHECK-NEXT:    }
// CHECK-NEXT:    gpipe.reduce_grad @train_s1
// CHECK-NEXT:    gpipe.step @train_s1

// 1F1B: the reduction follows the last fused backward, before the sends
// that are still due (the last stage's gradient to its predecessor).
// FUSED:       gpipe.program rank 1
// FUSED:         gpipe.backward @train_s1 mb 1
// FUSED-NEXT:    gpipe.reduce_grad @train_s1
// FUSED-NEXT:    gpipe.send @train_s1 mb 1 backward to 0
// FUSED-NEXT:    gpipe.step @train_s1

// The simulated timeline shows the reductions.
// SVG: gradient reduce

// -----

func.func private @f(tensor<2x8xf32>) -> tensor<2x8xf32>
func.func private @b(tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
gpipe.stage @s0 index 0 : tensor<2x8xf32> -> tensor<2x8xf32> forward @f backward @b
// expected-error @+1 {{has data_parallel 2 but stage @s0 has 0 gpipe.reduce_grad actions; expected exactly one}}
gpipe.pipeline @p stages [@s0] microbatches 1 schedule gpipe remat stage data_parallel 2 {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.backward @s0 mb 0
    gpipe.step @s0
  }
}

// -----

func.func private @f(tensor<2x8xf32>) -> tensor<2x8xf32>
func.func private @b(tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
gpipe.stage @s0 index 0 : tensor<2x8xf32> -> tensor<2x8xf32> forward @f backward @b
// expected-error @+1 {{expected data_parallel to be at least 1, got 0}}
gpipe.pipeline @p stages [@s0] microbatches 1 schedule gpipe remat stage data_parallel 0 {
}
