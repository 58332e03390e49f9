// Micro-batch loops, the memory plan attributes and a re-materialization
// region.

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
