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
