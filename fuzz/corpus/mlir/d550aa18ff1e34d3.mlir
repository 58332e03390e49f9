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
