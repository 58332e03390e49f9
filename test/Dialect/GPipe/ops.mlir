// RUN: gpipe-opt %s -split-input-file | gpipe-opt -split-input-file | FileCheck %s
// RUN: gpipe-opt %s -split-input-file --verify-roundtrip

// Round-trip of every gpipe op in its custom assembly form. The op verifiers
// check structure only; these programs are not meant to be valid schedules
// (gpipe-verify-schedule checks that).

// Every action kind, a split backward, both transfer directions, and stage
// functions with bodies (the last stage takes labels and returns the loss).

// CHECK-LABEL: gpipe.pipeline @every_action stages [@s0, @s1] microbatches 2 schedule custom remat stage {
// CHECK-NEXT:    gpipe.program rank 0 {
// CHECK-NEXT:      gpipe.forward @s0 mb 0
// CHECK-NEXT:      gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.recompute @s0 mb 0
// CHECK-NEXT:      gpipe.backward @s0 mb 0
// CHECK-NEXT:      gpipe.reduce_grad @s0
// CHECK-NEXT:      gpipe.step @s0
// CHECK-NEXT:    }
// CHECK-NEXT:    gpipe.program rank 1 {
// CHECK-NEXT:      gpipe.recv @s1 mb 1 forward from 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.forward @s1 mb 1
// CHECK-NEXT:      gpipe.backward_input @s1 mb 1
// CHECK-NEXT:      gpipe.send @s1 mb 1 backward to 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.backward_weight @s1 mb 1
// CHECK-NEXT:      gpipe.step @s1
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK:       gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
// CHECK:       gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @bi1 backward_weight @bw1
gpipe.pipeline @every_action stages [@s0, @s1] microbatches 2 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
    gpipe.recompute @s0 mb 0
    gpipe.backward @s0 mb 0
    gpipe.reduce_grad @s0
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    gpipe.recv @s1 mb 1 forward from 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 1
    gpipe.backward_input @s1 mb 1
    gpipe.send @s1 mb 1 backward to 0 : tensor<4x8xf32>
    gpipe.backward_weight @s1 mb 1
    gpipe.step @s1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @bi1 backward_weight @bw1
func.func @f0(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %w = nn.param @w0 : tensor<16x8xf32>
  %y = nn.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<4x8xf32>, tensor<8x8xf32>)
func.func private @bi1(tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
func.func private @bw1(tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<8x8xf32>
nn.parameter @w0 : tensor<16x8xf32> init normal(2.0e-02)

// -----

// An unscheduled pipeline: the body is empty until gpipe-schedule or
// gpipe-import-schedule fills it. "1f1b" is not a keyword and stays quoted.

// CHECK-LABEL: gpipe.pipeline @unscheduled_1f1b stages [@only] microbatches 4 schedule "1f1b" remat none {
// CHECK-NEXT:  }
// CHECK:       gpipe.stage @only index 0 : tensor<2x3xf32> -> tensor<f32> forward @f backward @b
gpipe.pipeline @unscheduled_1f1b stages [@only] microbatches 4 schedule "1f1b" remat none {
}
gpipe.stage @only index 0 : tensor<2x3xf32> -> tensor<f32> forward @f backward @b
func.func private @f(tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
func.func private @b(tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<3x3xf32>

// -----

// Cost estimates on the stages, extra attributes on a pipeline and a program,
// and stage 0 whose backward returns no input gradient (its input is data).

// CHECK-LABEL: gpipe.pipeline @with_attributes stages [@a, @b] microbatches 1 schedule gpipe remat stage attributes {note = "x"} {
// CHECK-NEXT:    gpipe.program rank 0 attributes {device = 0 : i64} {
// CHECK-NEXT:      gpipe.forward @a mb 0 {tag}
// CHECK:       gpipe.stage @a index 0 : tensor<4x2xi64> -> tensor<4x2x8xbf16> forward @fa backward @ba {backward_time = 4.000000e-03 : f64, forward_time = 2.000000e-03 : f64}
gpipe.pipeline @with_attributes stages [@a, @b] microbatches 1 schedule gpipe remat stage attributes {note = "x"} {
  gpipe.program rank 0 attributes {device = 0 : i64} {
    gpipe.forward @a mb 0 {tag}
    gpipe.send @a mb 0 forward to 1 : tensor<4x2x8xbf16>
  }
  gpipe.program rank 1 {
    gpipe.recv @b mb 0 forward from 0 : tensor<4x2x8xbf16>
  }
}
gpipe.stage @a index 0 : tensor<4x2xi64> -> tensor<4x2x8xbf16> forward @fa backward @ba {forward_time = 2.0e-03 : f64, backward_time = 4.0e-03 : f64}
gpipe.stage @b index 1 : tensor<4x2x8xbf16> -> tensor<f32> forward @fb backward @bb
func.func private @fa(tensor<4x2xi64>) -> tensor<4x2x8xbf16>
func.func private @ba(tensor<4x2xi64>, tensor<4x2x8xbf16>) -> tensor<10x8xbf16>
func.func private @fb(tensor<4x2x8xbf16>, tensor<4x2xi64>) -> tensor<f32>
func.func private @bb(tensor<4x2x8xbf16>, tensor<4x2xi64>, tensor<f32>) -> tensor<4x2x8xbf16>

// -----

// Interleaved placement: four stages on two ranks (rank r runs stages r and
// r + 2); data between stages 1 and 2 goes from rank 1 back to rank 0.

// CHECK-LABEL: gpipe.pipeline @interleaved stages [@s0, @s1, @s2, @s3] microbatches 1 schedule custom remat stage {
// CHECK:         gpipe.program rank 0 {
// CHECK:           gpipe.recv @s2 mb 0 forward from 1 : tensor<2xf32>
// CHECK:         gpipe.program rank 1 {
// CHECK:           gpipe.send @s1 mb 0 forward to 0 : tensor<2xf32>
gpipe.pipeline @interleaved stages [@s0, @s1, @s2, @s3] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.send @s0 mb 0 forward to 1 : tensor<2xf32>
    gpipe.recv @s2 mb 0 forward from 1 : tensor<2xf32>
    gpipe.forward @s2 mb 0
  }
  gpipe.program rank 1 {
    gpipe.recv @s1 mb 0 forward from 0 : tensor<2xf32>
    gpipe.forward @s1 mb 0
    gpipe.send @s1 mb 0 forward to 0 : tensor<2xf32>
  }
}
gpipe.stage @s0 index 0 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @s1 index 1 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @s2 index 2 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @s3 index 3 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
func.func private @f(tensor<2xf32>) -> tensor<2xf32>
func.func private @b(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>

// -----

// A slot placed buffer by buffer: a table of one offset per copy (-1: a
// copy no micro-batch uses).
// CHECK-LABEL: func.func private @slot_table
// CHECK-SAME: slot = #gpipe.slot<input stage 2 at 512 size 256 x 3 stride 256 table [1024, 512, -1]>
func.func private @slot_table() attributes {slot = #gpipe.slot<input stage 2 at 512 size 256 x 3 stride 256 table [1024, 512, -1]>}

// -----

// Micro-batch loops, the memory plan attributes and a re-materialization
// region.

// CHECK-LABEL: gpipe.pipeline @loops_and_plan stages [@s0, @s1] microbatches 4 schedule gpipe remat stage memory_plan <optimizer = adam, alignment = 64, budget = 0, peak = 960, arena = 1024, kept = [4, 4]> {
// CHECK-NEXT:    gpipe.program rank 0 arena <size = 1024, peak = 960, peak_at = 3, breakdown = <params = 0, grads = 0, optimizer = 0, kept = 512, scratch = 448, boundary = 0>, slots = [<input stage 0 at 0 size 128 x 4 stride 128>, <scratch stage -1 at 512 size 448 x 1 stride 512>]> {
// CHECK-NEXT:      gpipe.for %mb = 0 to 3 {
// CHECK-NEXT:        gpipe.forward @s0 mb %mb + 1
// CHECK-NEXT:        gpipe.send @s0 mb %mb + 1 forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.forward @s0 mb 0
// CHECK-NEXT:      gpipe.step @s0
// CHECK-NEXT:    }
// CHECK-NEXT:    gpipe.program rank 1 {
// CHECK-NEXT:    }
// CHECK-NEXT:  }
gpipe.pipeline @loops_and_plan stages [@s0, @s1] microbatches 4 schedule gpipe remat stage memory_plan <optimizer = adam, alignment = 64, budget = 0, peak = 960, arena = 1024, kept = [4, 4]> {
  gpipe.program rank 0 arena <size = 1024, peak = 960, peak_at = 3, breakdown = <params = 0, grads = 0, optimizer = 0, kept = 512, scratch = 448, boundary = 0>, slots = [<input stage 0 at 0 size 128 x 4 stride 128>, <scratch stage -1 at 512 size 448 x 1 stride 512>]> {
    gpipe.for %i = 0 to 3 {
      gpipe.forward @s0 mb %i + 1
      gpipe.send @s0 mb %i + 1 forward to 1 : tensor<4x8xf32>
    }
    gpipe.forward @s0 mb 0
    gpipe.step @s0
  }
  gpipe.program rank 1 {
  }
}
// CHECK:       func.func @b0
// CHECK-NEXT:    %[[W:.*]] = nn.param @w0 : tensor<16x8xf32>
// CHECK-NEXT:    %[[H:.*]]:2 = gpipe.remat stage -> tensor<4x8xf32>, tensor<4x8xf32> {
// CHECK-NEXT:      %[[MM:.*]] = nn.matmul %{{.*}}, %[[W]]
// CHECK-NEXT:      %[[R:.*]] = nn.relu %[[MM]]
// CHECK-NEXT:      gpipe.yield %[[MM]], %[[R]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    nn.mul %{{.*}}, %[[H]]#1
func.func @b0(%x: tensor<4x16xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = nn.param @w0 : tensor<16x8xf32>
  %h:2 = gpipe.remat stage -> tensor<4x8xf32>, tensor<4x8xf32> {
    %m = nn.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %r = nn.relu %m : tensor<4x8xf32>
    gpipe.yield %m, %r : tensor<4x8xf32>, tensor<4x8xf32>
  }
  %g = nn.mul %dy, %h#1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
nn.parameter @w0 : tensor<16x8xf32> init zeros
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b1
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b2
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b1(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b2(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// A forward-only (inference) pipeline: stages without backward, forwards
// and forward transfers only.

// CHECK-LABEL: gpipe.pipeline @forward_only stages [@s0, @s1] microbatches 2 schedule gpipe remat none forward_only {
// CHECK-NEXT:    gpipe.program rank 0 {
// CHECK-NEXT:      gpipe.for %[[MB:.*]] = 0 to 2 {
// CHECK-NEXT:        gpipe.forward @s0 mb %[[MB]]
// CHECK-NEXT:        gpipe.send @s0 mb %[[MB]] forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK:       gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0{{$}}
// CHECK:       gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<4x10xf32> forward @f1{{$}}
gpipe.pipeline @forward_only stages [@s0, @s1] microbatches 2 schedule gpipe remat none forward_only {
  gpipe.program rank 0 {
    gpipe.for %mb = 0 to 2 {
      gpipe.forward @s0 mb %mb
      gpipe.send @s0 mb %mb forward to 1 : tensor<4x8xf32>
    }
  }
  gpipe.program rank 1 {
    gpipe.for %mb = 0 to 2 {
      gpipe.recv @s1 mb %mb forward from 0 : tensor<4x8xf32>
      gpipe.forward @s1 mb %mb
    }
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<4x10xf32> forward @f1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<4x10xf32>

// -----

// Gradient clipping: the bound on the pipeline, a clip_grad on every rank
// before its steps, in the norm slot.

// CHECK-LABEL: gpipe.pipeline @clipped stages [@s0, @s1] microbatches 1 schedule gpipe remat stage clip_grad_norm 2.500000e-01 {
// CHECK:         gpipe.clip_grad @s0
// CHECK-NEXT:    gpipe.step @s0
// CHECK:         gpipe.clip_grad @s1
// CHECK-NEXT:    gpipe.step @s1
gpipe.pipeline @clipped stages [@s0, @s1] microbatches 1 schedule gpipe remat stage clip_grad_norm 0.25 {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
    gpipe.backward @s0 mb 0
    gpipe.clip_grad @s0
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 0
    gpipe.backward @s1 mb 0
    gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
    gpipe.clip_grad @s1
    gpipe.step @s1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
