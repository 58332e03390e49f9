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
