// RUN: gpipe-import --preset mlp --depth 3 --width 8 --in-features 8 --classes 4 --batch 8 | gpipe-opt --gpipe-pipeline="stages=2 microbatches=2 schedule=zbv" | FileCheck %s
// RUN: gpipe-import --preset mlp --depth 3 --width 8 --in-features 8 --classes 4 --batch 8 | gpipe-opt --gpipe-pipeline="stages=2 microbatches=2 schedule=1f1b" | FileCheck %s --check-prefix=FUSED
// RUN: gpipe-import --preset mlp --depth 3 --width 8 --in-features 8 --classes 4 --batch 8 | gpipe-opt --gpipe-pipeline="stages=2 microbatches=4 schedule=interleaved-1f1b" | FileCheck %s --check-prefix=INTERLEAVED
// RUN: gpipe-import --preset mlp --depth 3 --width 8 --in-features 8 --classes 4 --batch 8 | gpipe-opt --gpipe-pipeline="stages=2 microbatches=4 schedule=zb-h1" '--gpipe-export-trace=file=%t.json svg=%t.svg' -o /dev/null
// RUN: FileCheck %s --check-prefix=TRACE < %t.json
// RUN: FileCheck %s --check-prefix=SVG < %t.svg

// The zero-bubble split: each stage's backward also comes as an input half
// (the input gradient the previous stage waits for, then what the weight
// half needs: nn.deferred_count values) and a weight half (the backward's
// arguments, then those values; the parameter gradients). Stage 0 has no
// input gradient: its input half is empty and its weight half does it all.
// ZB-V cuts 2 ranks x 2 stages and places them V-shaped (rank 0 holds the
// first and the last stage); the planner keeps what I hands to W in a
// Deferred slot.

// CHECK-LABEL: func.func @train_s0_bwd_input(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x8xf32>)
// CHECK-SAME:    nn.deferred_count = 0
// CHECK-NEXT:    return
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @train_s0_bwd_weight(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x8xf32>) -> (tensor<8x8xf32>, tensor<8xf32>)
// CHECK-SAME:    nn.param_grads = [@"0.weight", @"0.bias"]
// CHECK:         gpipe.remat stage
// CHECK:         nn.gemm
// CHECK:       gpipe.stage @train_s0 index 0 {{.*}} backward @train_s0_bwd backward_input @train_s0_bwd_input backward_weight @train_s0_bwd_weight

// The ReLU's masked gradient is computed once, by the input half, and
// handed to the weight half (its last argument) for the weight's GEMM.
// CHECK-LABEL: func.func @train_s1_bwd_input(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-SAME:    nn.deferred_count = 1
// CHECK-SAME:    nn.input_grads = array<i64: 0>
// CHECK:         %[[MASKED:.*]] = nn.where
// CHECK:         %[[DX:.*]] = nn.linear %[[MASKED]]
// CHECK:         return %[[DX]], %[[MASKED]]
// CHECK-LABEL: func.func @train_s1_bwd_weight(
// CHECK-SAME:    %{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x8xf32>, %[[G:.*]]: tensor<4x8xf32>) -> (tensor<8x8xf32>, tensor<8xf32>)
// CHECK-SAME:    nn.deferred_count = 1
// CHECK-NOT:     nn.where
// CHECK:         nn.gemm %[[G]]
// CHECK:         nn.reduce_sum %[[G]]

// CHECK:       gpipe.pipeline @train stages [@train_s0, @train_s1, @train_s2, @train_s3] microbatches 2 schedule zbv virtual_stages 2 remat stage
// CHECK:         gpipe.program rank 0 arena <{{.*}}<deferred stage 3 at
// CHECK:           gpipe.backward_input @train_s3 mb
// CHECK:           gpipe.backward_weight @train_s3 mb
// CHECK:           gpipe.backward_input @train_s0 mb
// CHECK:           gpipe.backward_weight @train_s0 mb
// CHECK:           gpipe.step @train_s0
// CHECK:           gpipe.step @train_s3
// CHECK:         gpipe.program rank 1 arena <{{.*}}<deferred stage 2 at
// CHECK:           gpipe.step @train_s1
// CHECK:           gpipe.step @train_s2

// Schedules with full backwards get no halves.
// FUSED-NOT: backward_input
// FUSED: gpipe.pipeline @train stages [@train_s0, @train_s1] microbatches 2 schedule "1f1b" remat stage

// Interleaved 1F1B places stage s on rank s mod 2.
// INTERLEAVED-NOT: backward_input
// INTERLEAVED:     gpipe.pipeline @train stages [@train_s0, @train_s1, @train_s2, @train_s3] microbatches 4 schedule "interleaved-1f1b" virtual_stages 2 remat stage
// INTERLEAVED:       gpipe.program rank 0
// INTERLEAVED-NOT:   gpipe.program
// INTERLEAVED:         gpipe.step @train_s0
// INTERLEAVED-NEXT:    gpipe.step @train_s2
// INTERLEAVED:       gpipe.program rank 1
// INTERLEAVED:         gpipe.step @train_s1
// INTERLEAVED-NEXT:    gpipe.step @train_s3

// The trace and the picture show the two halves apart.
// TRACE-DAG: "name": "I0"
// TRACE-DAG: "name": "W3"
// SVG-DAG: backward input (I)
// SVG-DAG: backward weight (W)
