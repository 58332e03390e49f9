// Round-trip of every gpipe op in its custom assembly form. The op verifiers
// check structure only; these programs are not meant to be valid schedules
// (gpipe-verify-schedule checks that).

// Every action kind, a split backward, both transfer directions, and stage
// functions with bodies (the last stage takes labels and returns the loss).

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
