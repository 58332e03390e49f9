// gpipe-verify-schedule runs the schedule verifier on each pipeline and
// reports every finding as an error at the action it names, with the
// verifier's text. Valid schedules pass unchanged.

// More findings than the verifier lists: the first 16, then the summary at
// the pipeline.
// MANY-COUNT-16: error: stage 0 micro-batch {{[0-9]+}} has no backward
// MANY-NOT:      micro-batch 16
// MANY:          error: schedule is invalid: 17 problems (17 coverage), first 16 shown

// A valid 1F1B schedule (K = 2, M = 2) passes and is left unchanged.

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
