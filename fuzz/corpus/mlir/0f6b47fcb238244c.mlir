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
