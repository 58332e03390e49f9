// RUN: gpipe-opt %s -split-input-file -verify-diagnostics

// Every verifier rule of the gpipe ops, with its exact message. Schedule-level
// rules (coverage, order, matching, deadlock) are gpipe-verify-schedule's and
// are tested in verify-schedule.mlir.

//===----------------------------------------------------------------------===//
// gpipe.stage
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'gpipe.stage' op expected a non-negative stage index, got -1}}
gpipe.stage @negative_index index -1 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected backward_input and backward_weight together, got only backward_input}}
gpipe.stage @half_split_backward index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0 backward_input @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected a finite non-negative forward_time, got -1.000000e+00}}
gpipe.stage @negative_time index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0 {forward_time = -1.0 : f64}
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op attribute 'input_type' failed to satisfy constraint: type attribute of statically shaped tensor of any type values}}
gpipe.stage @dynamic_input index 0 : tensor<?x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

func.func @stage_in_function() {
  // expected-error @+1 {{'gpipe.stage' op expects parent op 'builtin.module'}}
  gpipe.stage @nested index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
  return
}
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op forward function @missing not found}}
gpipe.stage @missing_forward index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @missing backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op backward function @other is a 'gpipe.stage', expected a 'func.func'}}
gpipe.stage @backward_not_a_function index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @other
gpipe.stage @other index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected forward function @f0 to take the stage input 'tensor<4x32xf32>' first, got '(tensor<4x16xf32>) -> tensor<4x8xf32>'}}
gpipe.stage @forward_input_mismatch index 0 : tensor<4x32xf32> -> tensor<4x8xf32> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected forward function @f0 to return the stage output 'tensor<4x8xf16>' first, got '(tensor<4x16xf32>) -> tensor<4x8xf32>'}}
gpipe.stage @forward_output_mismatch index 0 : tensor<4x16xf32> -> tensor<4x8xf16> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected backward function @f0 to take the forward's arguments 'tensor<4x16xf32>' and then the output gradient 'tensor<4x8xf32>', got '(tensor<4x16xf32>) -> tensor<4x8xf32>'}}
gpipe.stage @backward_without_output_gradient index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @f0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// remat none: the backward takes the values the forward saves (its last
// results, nn.saved_count) between the forward's arguments and the output
// gradient.
// expected-error @+1 {{'gpipe.stage' op expected backward function @b to take the 1 values its forward saves (nn.saved_count), got 0}}
gpipe.stage @backward_without_saved_count index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f backward @b
func.func private @f(tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {nn.saved_count = 1 : i64}
func.func private @b(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected backward function @b to take the forward's arguments 'tensor<4x16xf32>', the saved values 'tensor<4x4xf32>' and then the output gradient 'tensor<4x8xf32>', got '(tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>'}}
gpipe.stage @backward_saved_mismatch index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f backward @b
func.func private @f(tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>) attributes {nn.saved_count = 1 : i64}
func.func private @b(tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32> attributes {nn.saved_count = 1 : i64}

// -----

// expected-error @+1 {{'gpipe.stage' op expected forward function @f to return the stage output and the 1 values it saves (nn.saved_count), got '(tensor<4x16xf32>) -> tensor<4x8xf32>'}}
gpipe.stage @forward_without_saved_values index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f backward @b
func.func private @f(tensor<4x16xf32>) -> tensor<4x8xf32> attributes {nn.saved_count = 1 : i64}
func.func private @b(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected backward function @b of stage 1 to return the input gradient 'tensor<4x8xf32>' first, got '(tensor<4x8xf32>, tensor<f32>) -> tensor<8x8xf32>'}}
gpipe.stage @backward_without_input_gradient index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b
func.func private @b(tensor<4x8xf32>, tensor<f32>) -> tensor<8x8xf32>
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected backward_weight function @w1 to take the 1 values backward_input @i1 hands over (nn.deferred_count), got 0}}
gpipe.stage @deferred_count_mismatch index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @i1 backward_weight @w1
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
func.func private @i1(tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {nn.deferred_count = 1 : i64}
func.func private @w1(tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> tensor<8x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected backward_weight function @w1 to take last the 1 values backward_input @i1 returns last, got '(tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)' and '(tensor<4x8xf32>, tensor<f32>, tensor<4x4xf32>) -> tensor<8x8xf32>'}}
gpipe.stage @deferred_type_mismatch index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @i1 backward_weight @w1
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
func.func private @i1(tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {nn.deferred_count = 1 : i64}
func.func private @w1(tensor<4x8xf32>, tensor<f32>, tensor<4x4xf32>) -> tensor<8x8xf32> attributes {nn.deferred_count = 1 : i64}

// -----

// expected-error @+1 {{'gpipe.stage' op expected backward_weight function @f1 to take the forward's arguments 'tensor<4x8xf32>' and then the output gradient 'tensor<f32>', got '(tensor<4x8xf32>) -> tensor<f32>'}}
gpipe.stage @bad_weight_half index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @f1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

//===----------------------------------------------------------------------===//
// gpipe.pipeline and gpipe.program
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'gpipe.pipeline' op expected at least one stage}}
gpipe.pipeline @no_stages stages [] microbatches 2 schedule gpipe remat stage {
}

// -----

// expected-error @+1 {{'gpipe.pipeline' op expected at least one micro-batch, got 0}}
gpipe.pipeline @no_microbatches stages [@s0, @s1] microbatches 0 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.pipeline' op expected at most 2147483647 micro-batches, got 4294967296}}
gpipe.pipeline @too_many_microbatches stages [@s0, @s1] microbatches 4294967296 schedule gpipe remat stage {
}

// -----

// expected-error @+1 {{'gpipe.pipeline' op stage @s0 is listed twice}}
gpipe.pipeline @stage_listed_twice stages [@s0, @s0] microbatches 2 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+2 {{expected ::mlir::gpipe::ScheduleKind to be one of: gpipe, 1f1b, custom}}
// expected-error @+1 {{failed to parse GPipe_ScheduleKindAttr parameter 'value' which is to be a `::mlir::gpipe::ScheduleKind`}}
gpipe.pipeline @unknown_schedule stages [@s0, @s1] microbatches 2 schedule zero_bubble remat stage {
}

// -----

// expected-error @+1 {{'gpipe.pipeline' op stage @f0 does not name a 'gpipe.stage'}}
gpipe.pipeline @stage_is_a_function stages [@f0] microbatches 2 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.pipeline' op expected stage @s1 at position 0 to have index 0, got 1}}
gpipe.pipeline @stages_out_of_order stages [@s1, @s0] microbatches 2 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.pipeline' op stage @s0 produces 'tensor<4x8xf32>' but the next stage @t1 takes 'tensor<4x9xf32>'}}
gpipe.pipeline @boundary_type_mismatch stages [@s0, @t1] microbatches 2 schedule gpipe remat stage {
}
gpipe.stage @t1 index 1 : tensor<4x9xf32> -> tensor<f32> forward @g1 backward @c1
func.func private @g1(tensor<4x9xf32>) -> tensor<f32>
func.func private @c1(tensor<4x9xf32>, tensor<f32>) -> tensor<4x9xf32>
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @function_in_body stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  // expected-error @+1 {{'func.call' op is not allowed in a pipeline body, expected 'gpipe.program'}}
  func.call @f0_unused() : () -> ()
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @programs_out_of_order stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  // expected-error @+1 {{'gpipe.program' op expected rank 0 (programs list ranks 0, 1, ... in order), got 1}}
  gpipe.program rank 1 {
  }
  gpipe.program rank 0 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @negative_rank stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  // expected-error @+1 {{'gpipe.program' op expected a non-negative rank, got -1}}
  gpipe.program rank -1 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @stage_on_two_ranks stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
  }
  gpipe.program rank 1 {
    // expected-error @+1 {{'gpipe.forward' op runs stage @s0 on rank 1, but rank 0 runs it too; a stage runs on one rank}}
    gpipe.forward @s0 mb 1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @function_in_program stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'func.call' op is not allowed in a program, expected a pipeline action}}
    func.call @f0_unused() : () -> ()
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

func.func @program_outside_pipeline() {
  // expected-error @+1 {{'gpipe.program' op expects parent op 'gpipe.pipeline'}}
  "gpipe.program"() <{rank = 0 : i64}> ({
  }) : () -> ()
  return
}

// -----

gpipe.pipeline @action_outside_program stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  // expected-error @+1 {{'gpipe.forward' op expects parent op to be one of 'gpipe.program, gpipe.for'}}
  gpipe.forward @s0 mb 0
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

//===----------------------------------------------------------------------===//
// Actions
//===----------------------------------------------------------------------===//

gpipe.pipeline @foreign_stage stages [@s0] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.forward' op stage @s1 is not a stage of pipeline @foreign_stage}}
    gpipe.forward @s1 mb 0
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @microbatch_too_large stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.backward' op micro-batch 2 out of range for 2 micro-batches}}
    gpipe.backward @s0 mb 2
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @negative_microbatch stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.send' op micro-batch -1 out of range for 2 micro-batches}}
    gpipe.send @s0 mb -1 forward to 1 : tensor<4x8xf32>
  }
  gpipe.program rank 1 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @peer_out_of_range stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.send' op peer rank 2 out of range for 2 ranks}}
    gpipe.send @s0 mb 0 forward to 2 : tensor<4x8xf32>
  }
  gpipe.program rank 1 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @peer_is_own_rank stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
  }
  gpipe.program rank 1 {
    // expected-error @+1 {{'gpipe.recv' op peer rank 1 is its own rank; stages on one rank hand data over in memory}}
    gpipe.recv @s1 mb 0 forward from 1 : tensor<4x8xf32>
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @send_forward_from_last_stage stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
  }
  gpipe.program rank 1 {
    // expected-error @+1 {{'gpipe.send' op sends an activation forward from the last stage @s1}}
    gpipe.send @s1 mb 0 forward to 0 : tensor<f32>
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @recv_forward_on_first_stage stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.recv' op receives an activation on the first stage @s0}}
    gpipe.recv @s0 mb 0 forward from 1 : tensor<4x16xf32>
  }
  gpipe.program rank 1 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @send_backward_from_first_stage stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.send' op sends a gradient backward from the first stage @s0}}
    gpipe.send @s0 mb 0 backward to 1 : tensor<4x16xf32>
  }
  gpipe.program rank 1 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @recv_backward_on_last_stage stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
  }
  gpipe.program rank 1 {
    // expected-error @+1 {{'gpipe.recv' op receives a gradient on the last stage @s1}}
    gpipe.recv @s1 mb 0 backward from 0 : tensor<f32>
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @unknown_direction stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+2 {{expected ::mlir::gpipe::Direction to be one of: forward, backward}}
    // expected-error @+1 {{failed to parse GPipe_DirectionAttr parameter 'value' which is to be a `::mlir::gpipe::Direction`}}
    gpipe.send @s0 mb 0 sideways to 1 : tensor<4x8xf32>
  }
}

// -----

gpipe.pipeline @forward_payload_mismatch stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.send' op expected payload 'tensor<4x8xf32>' (the output type of stage @s0), got 'tensor<4x16xf32>'}}
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x16xf32>
  }
  gpipe.program rank 1 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @backward_payload_mismatch stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
  }
  gpipe.program rank 1 {
    // expected-error @+1 {{'gpipe.send' op expected payload 'tensor<4x8xf32>' (the input type of stage @s1), got 'tensor<f32>'}}
    gpipe.send @s1 mb 0 backward to 0 : tensor<f32>
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @recv_gradient_payload_mismatch stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.recv' op expected payload 'tensor<4x8xf32>' (the output type of stage @s0), got 'tensor<4x16xf32>'}}
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x16xf32>
  }
  gpipe.program rank 1 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @split_backward_not_declared stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.backward_weight' op needs a split backward, but stage @s0 declares no backward_input and backward_weight}}
    gpipe.backward_weight @s0 mb 0
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @recompute_without_remat stages [@s0, @s1] microbatches 2 schedule gpipe remat none {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.recompute' op recomputes in pipeline @recompute_without_remat, whose remat policy is none}}
    gpipe.recompute @s0 mb 0
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

//===----------------------------------------------------------------------===//
// gpipe.for
//===----------------------------------------------------------------------===//

// -----

gpipe.pipeline @empty_loop stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.for' op expected 0 <= lower < upper, got 2 to 2}}
    gpipe.for %mb = 2 to 2 {
      gpipe.forward @s0 mb %mb
    }
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @loop_past_m stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    gpipe.for %mb = 0 to 2 {
      // expected-error @+1 {{'gpipe.forward' op micro-batch 2 out of range for 2 micro-batches}}
      gpipe.forward @s0 mb %mb + 1
    }
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @nested_loops stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    gpipe.for %mb = 0 to 2 {
      // expected-error @+1 {{'gpipe.for' op is not allowed in a 'gpipe.for', expected a pipeline action}}
      gpipe.for %inner = 0 to 2 {
      }
    }
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @not_an_action_in_loop stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    gpipe.for %mb = 0 to 2 {
      // expected-error @+1 {{'gpipe.program' op is not allowed in a 'gpipe.for', expected a pipeline action}}
      gpipe.program rank 1 {
      }
    }
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

//===----------------------------------------------------------------------===//
// The memory plan attributes
//===----------------------------------------------------------------------===//

// expected-error @+1 {{expected at least one copy, got 0}}
func.func private @zero_copies() attributes {slot = #gpipe.slot<input stage 0 at 0 size 64 x 0 stride 64>}

// -----

// expected-error @+1 {{expected a stride of at least the size 64, got 32}}
func.func private @overlapping_copies() attributes {slot = #gpipe.slot<input stage 0 at 0 size 64 x 2 stride 32>}

// -----

// expected-error @+1 {{expected a table of one offset per copy (3), got 2}}
func.func private @short_table() attributes {slot = #gpipe.slot<input stage 0 at 0 size 64 x 3 stride 64 table [0, 64]>}

// -----

// expected-error @+1 {{expected a table with at least one placed copy}}
func.func private @empty_table() attributes {slot = #gpipe.slot<input stage 0 at 0 size 64 x 2 stride 64 table [-1, -1]>}

// -----

// expected-error @+1 {{expected the table's offsets at or above the slot's offset 128 (or -1 for an unused copy), got 64}}
func.func private @table_below_offset() attributes {slot = #gpipe.slot<input stage 0 at 128 size 64 x 2 stride 64 table [128, 64]>}

// -----

// expected-error @+1 {{expected stage -1 exactly for the rank's scratch slot, got scratch of stage 0}}
func.func private @scratch_of_a_stage() attributes {slot = #gpipe.slot<scratch stage 0 at 0 size 64 x 1 stride 64>}

// -----

gpipe.pipeline @slot_past_arena stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  // expected-error @+1 {{'gpipe.program' op arena slot #gpipe.slot<input stage 0 at 64 size 64 x 2 stride 64> ends at byte 192, past the arena's 128}}
  gpipe.program rank 0 arena <size = 128, peak = 128, peak_at = 0, breakdown = <params = 0, grads = 0, optimizer = 0, kept = 128, scratch = 0, boundary = 0>, slots = [<input stage 0 at 64 size 64 x 2 stride 64>]> {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{two slots for input of stage 0}}
func.func private @duplicate_slots() attributes {arena = #gpipe.arena<size = 128, peak = 128, peak_at = 0, breakdown = <params = 0, grads = 0, optimizer = 0, kept = 128, scratch = 0, boundary = 0>, slots = [<input stage 0 at 0 size 64 x 1 stride 64>, <input stage 0 at 64 size 64 x 1 stride 64>]>}

// -----

//===----------------------------------------------------------------------===//
// gpipe.remat
//===----------------------------------------------------------------------===//

func.func @remat_none(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'gpipe.remat' op re-materializes under remat policy none, which keeps every activation instead}}
  %r = gpipe.remat none -> tensor<4xf32> {
    %y = nn.relu %x : tensor<4xf32>
    gpipe.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @remat_auto(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'gpipe.remat' op re-materializes under remat policy auto, which gpipe-compile resolves to selective}}
  %r = gpipe.remat auto -> tensor<4xf32> {
    %y = nn.relu %x : tensor<4xf32>
    gpipe.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{'gpipe.pipeline' op has remat auto, which gpipe-compile resolves to selective before the partition; expected none, stage or selective}}
gpipe.pipeline @auto stages [@s0] microbatches 2 schedule gpipe remat auto {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<f32> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<f32>
func.func private @b0(tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>

// -----

func.func @remat_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'gpipe.remat' op yields 'tensor<4xf32>' but returns 'tensor<2xf32>'}}
  %r = gpipe.remat stage -> tensor<2xf32> {
    %y = nn.relu %x : tensor<4xf32>
    gpipe.yield %y : tensor<4xf32>
  }
  return %x : tensor<4xf32>
}

// -----

// expected-error @+2 {{unknown optimizer 'lamb' (expected sgd, momentum or adam)}}
// expected-error @+1 {{failed to parse GPipe_MemoryPlanAttr parameter 'optimizer'}}
gpipe.pipeline @bad_optimizer stages [] microbatches 1 schedule gpipe remat stage memory_plan <optimizer = lamb, alignment = 64, budget = 0, peak = 0, arena = 0, kept = []> {
}

//===----------------------------------------------------------------------===//
// Forward-only (inference) pipelines
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'gpipe.pipeline' op is forward_only: its schedule names where its stages run, expected a generated schedule, got custom}}
gpipe.pipeline @forward_only_custom stages [@s0] microbatches 2 schedule custom remat none forward_only {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.pipeline' op is forward_only and keeps nothing for a backward; expected remat none, got stage}}
gpipe.pipeline @forward_only_remat stages [@s0] microbatches 2 schedule gpipe remat stage forward_only {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.pipeline' op stage @s0 declares a backward, but the pipeline is forward_only}}
gpipe.pipeline @forward_only_with_backward stages [@s0] microbatches 2 schedule gpipe remat none forward_only {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>

// -----

// expected-error @+1 {{'gpipe.pipeline' op stage @s0 declares no backward, but the pipeline trains (only a forward_only pipeline has stages without one)}}
gpipe.pipeline @training_without_backward stages [@s0] microbatches 2 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>

// -----

gpipe.pipeline @forward_only_step stages [@s0] microbatches 1 schedule gpipe remat none forward_only {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    // expected-error @+1 {{'gpipe.step' op has no place in forward-only pipeline @forward_only_step, whose programs run forwards and forward transfers only}}
    gpipe.step @s0
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{'gpipe.stage' op expected forward function @f0 of a stage without backward to take the stage input and return the stage output only, got '(tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>'}}
gpipe.stage @labels_without_backward index 0 : tensor<4x16xf32> -> tensor<f32> forward @f0
func.func private @f0(tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>

// -----

// expected-error @+1 {{'gpipe.pipeline' op expected clip_grad_norm to be positive and finite, got 0}}
gpipe.pipeline @clip_zero stages [@s0] microbatches 2 schedule gpipe remat stage clip_grad_norm 0.0 {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<f32> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<f32>
func.func private @b0(tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>

// -----

// expected-error @+1 {{'gpipe.pipeline' op is forward_only and has no gradients to clip; expected no clip_grad_norm}}
gpipe.pipeline @clip_inference stages [@s0] microbatches 2 schedule gpipe remat none forward_only clip_grad_norm 1.0 {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
