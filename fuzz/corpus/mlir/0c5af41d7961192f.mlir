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
