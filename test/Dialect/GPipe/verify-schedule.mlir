// RUN: gpipe-opt %s -split-input-file -verify-diagnostics --gpipe-verify-schedule | FileCheck %s
// RUN: not gpipe-opt %S/Inputs/many-problems.mlir --gpipe-verify-schedule 2>&1 | FileCheck %s --check-prefix=MANY

// gpipe-verify-schedule runs the schedule verifier on each pipeline and
// reports every finding as an error at the action it names, with the
// verifier's text. Valid schedules pass unchanged.

// More findings than the verifier lists: the first 16, then the summary at
// the pipeline.
// MANY-COUNT-16: error: stage 0 micro-batch {{[0-9]+}} has no backward
// MANY-NOT:      micro-batch 16
// MANY:          error: schedule is invalid: 17 problems (17 coverage), first 16 shown

// A valid 1F1B schedule (K = 2, M = 2) passes and is left unchanged.

// CHECK-LABEL: gpipe.pipeline @valid_one_f_one_b stages [@s0, @s1] microbatches 2 schedule "1f1b" remat stage {
// CHECK:         gpipe.program rank 1 {
// CHECK-NEXT:      gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
gpipe.pipeline @valid_one_f_one_b stages [@s0, @s1] microbatches 2 schedule "1f1b" remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
    gpipe.forward @s0 mb 1
    gpipe.send @s0 mb 1 forward to 1 : tensor<4x8xf32>
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
    gpipe.backward @s0 mb 0
    gpipe.recv @s0 mb 1 backward from 1 : tensor<4x8xf32>
    gpipe.backward @s0 mb 1
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 0
    gpipe.recv @s1 mb 1 forward from 0 : tensor<4x8xf32>
    gpipe.backward @s1 mb 0
    gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 1
    gpipe.backward @s1 mb 1
    gpipe.send @s1 mb 1 backward to 0 : tensor<4x8xf32>
    gpipe.step @s1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// Zero-bubble halves: the input-gradient half goes upstream before the
// weight-gradient half runs.

// CHECK-LABEL: gpipe.pipeline @valid_split_backward
gpipe.pipeline @valid_split_backward stages [@s0, @s1] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
    gpipe.backward @s0 mb 0
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 0
    gpipe.backward_input @s1 mb 0
    gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
    gpipe.backward_weight @s1 mb 0
    gpipe.step @s1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// Both ranks receive before they send: a wait cycle. The error is at the
// first action of the cycle, a note at every other one.

gpipe.pipeline @deadlock_both_receive_first stages [@s0, @s1] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    // expected-error @+1 {{deadlock: rank 0 waits for rank 1 (action 1, 0RECV_B0 from rank 1), rank 1 waits for rank 0 (action 0, 1RECV_F0 from rank 0)}}
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
    gpipe.backward @s0 mb 0
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    // expected-note @+1 {{rank 1 waits here for rank 0 (1RECV_F0 from rank 0)}}
    gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 0
    gpipe.backward @s1 mb 0
    gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
    gpipe.step @s1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// Rank 1 never receives the activation: the send is unmatched, and rank 0
// blocks in it while rank 1 blocks sending the gradient.

gpipe.pipeline @missing_receive stages [@s0, @s1] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    // expected-error @+2 {{rank 0 action 1 (0SEND_F0 to rank 1) has no matching receive (no 1RECV_F0 on rank 1)}}
    // expected-error @+1 {{deadlock: rank 0 waits for rank 1 (action 1, 0SEND_F0 to rank 1), rank 1 waits for rank 0 (action 2, 1SEND_B0 to rank 0)}}
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
    gpipe.backward @s0 mb 0
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    gpipe.forward @s1 mb 0
    gpipe.backward @s1 mb 0
    // expected-note @+1 {{rank 1 waits here for rank 0 (1SEND_B0 to rank 0)}}
    gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
    gpipe.step @s1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// Rank 1 receives micro-batch 0 twice instead of 0 then 1.

gpipe.pipeline @wrong_microbatch stages [@s0, @s1] microbatches 2 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    // expected-error @+1 {{rank 0 runs 0SEND_F0 once (action 1) and rank 1 runs 1RECV_F0 2 times (actions 0 and 2); expected exactly one of each}}
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
    gpipe.forward @s0 mb 1
    // expected-error @+2 {{rank 0 action 3 (0SEND_F1 to rank 1) has no matching receive (no 1RECV_F1 on rank 1)}}
    // expected-error @+1 {{deadlock: rank 0 waits for rank 1 (action 3, 0SEND_F1 to rank 1), rank 1 waits for rank 0 (action 2, 1RECV_F0 from rank 0)}}
    gpipe.send @s0 mb 1 forward to 1 : tensor<4x8xf32>
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
    gpipe.backward @s0 mb 0
    gpipe.recv @s0 mb 1 backward from 1 : tensor<4x8xf32>
    gpipe.backward @s0 mb 1
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    // expected-note @+1 {{see rank 1 action 0 (1RECV_F0 from rank 0)}}
    gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 0
    // expected-note @+2 {{see rank 1 action 2 (1RECV_F0 from rank 0)}}
    // expected-note @+1 {{rank 1 waits here for rank 0 (1RECV_F0 from rank 0)}}
    gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 1
    gpipe.backward @s1 mb 0
    gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
    gpipe.backward @s1 mb 1
    gpipe.send @s1 mb 1 backward to 0 : tensor<4x8xf32>
    gpipe.step @s1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// Rank 0 sends stage 0's activation to rank 2, which runs stage 2, instead
// of rank 1: a wrong peer, and a three-rank wait cycle.

gpipe.pipeline @wrong_peer stages [@t0, @t1, @t2] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @t0 mb 0
    // expected-error @+2 {{rank 0 action 1 (0SEND_F0 to rank 2): expected peer rank 1, the rank of stage 1}}
    // expected-error @+1 {{deadlock: rank 0 waits for rank 2 (action 1, 0SEND_F0 to rank 2), rank 2 waits for rank 1 (action 0, 2RECV_F0 from rank 1), rank 1 waits for rank 0 (action 0, 1RECV_F0 from rank 0)}}
    gpipe.send @t0 mb 0 forward to 2 : tensor<2xf32>
    gpipe.recv @t0 mb 0 backward from 1 : tensor<2xf32>
    gpipe.backward @t0 mb 0
    gpipe.step @t0
  }
  gpipe.program rank 1 {
    // expected-note @+1 {{rank 1 waits here for rank 0 (1RECV_F0 from rank 0)}}
    gpipe.recv @t1 mb 0 forward from 0 : tensor<2xf32>
    gpipe.forward @t1 mb 0
    gpipe.send @t1 mb 0 forward to 2 : tensor<2xf32>
    gpipe.recv @t1 mb 0 backward from 2 : tensor<2xf32>
    gpipe.backward @t1 mb 0
    gpipe.send @t1 mb 0 backward to 0 : tensor<2xf32>
    gpipe.step @t1
  }
  gpipe.program rank 2 {
    // expected-note @+1 {{rank 2 waits here for rank 1 (2RECV_F0 from rank 1)}}
    gpipe.recv @t2 mb 0 forward from 1 : tensor<2xf32>
    gpipe.forward @t2 mb 0
    gpipe.backward @t2 mb 0
    gpipe.send @t2 mb 0 backward to 1 : tensor<2xf32>
    gpipe.step @t2
  }
}
gpipe.stage @t0 index 0 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @t1 index 1 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @t2 index 2 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
func.func private @f(tensor<2xf32>) -> tensor<2xf32>
func.func private @b(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>

// -----

// A finding that names no action is reported at the pipeline (micro-batch 2
// runs nothing; the recomputes only bring the program to the 2 x 3 actions
// the verifier needs before looking closer); one that names two gets a note
// at the second. A missing backward is reported at the forward it belongs
// to.

// expected-error @+2 {{stage 0 micro-batch 2 has no forward}}
// expected-error @+1 {{stage 0 micro-batch 2 has no backward}}
gpipe.pipeline @step_before_forward stages [@s0] microbatches 3 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.recompute @s0 mb 0
    gpipe.backward @s0 mb 0
    // expected-note @+1 {{see rank 0 action 3 (0STEP)}}
    gpipe.step @s0
    // expected-error @+2 {{stage 0 micro-batch 1 has no backward for its forward at rank 0 action 4 (0F1)}}
    // expected-error @+1 {{rank 0 action 4 (0F1) follows the parameter update at rank 0 action 3 (0STEP); steps must come last}}
    gpipe.forward @s0 mb 1
    gpipe.recompute @s0 mb 1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// A backward before the gradient it consumes arrives.

gpipe.pipeline @backward_before_its_gradient stages [@s0, @s1] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
    // expected-error @+1 {{rank 0 action 2 (0B0) runs before its gradient arrives at rank 0 action 3 (0RECV_B0 from rank 1)}}
    gpipe.backward @s0 mb 0
    // expected-note @+1 {{see rank 0 action 3 (0RECV_B0 from rank 1)}}
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 0
    gpipe.backward @s1 mb 0
    gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
    gpipe.step @s1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{pipeline @unscheduled has no programs to verify; run gpipe-schedule or gpipe-import-schedule first}}
gpipe.pipeline @unscheduled stages [@s0, @s1] microbatches 1 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+2 {{pipeline @stage_on_no_rank runs stage @s0 on no rank: no program has an action of it}}
// expected-error @+1 {{pipeline @stage_on_no_rank runs stage @s1 on no rank: no program has an action of it}}
gpipe.pipeline @stage_on_no_rank stages [@s0, @s1] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
