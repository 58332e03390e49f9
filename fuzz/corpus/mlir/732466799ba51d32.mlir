// Interleaved placement: four stages on two ranks (rank r runs stages r and
// r + 2); data between stages 1 and 2 goes from rank 1 back to rank 0.

gpipe.pipeline @interleaved stages [@s0, @s1, @s2, @s3] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.send @s0 mb 0 forward to 1 : tensor<2xf32>
    gpipe.recv @s2 mb 0 forward from 1 : tensor<2xf32>
    gpipe.forward @s2 mb 0
  }
  gpipe.program rank 1 {
    gpipe.recv @s1 mb 0 forward from 0 : tensor<2xf32>
    gpipe.forward @s1 mb 0
    gpipe.send @s1 mb 0 forward to 0 : tensor<2xf32>
  }
}
gpipe.stage @s0 index 0 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @s1 index 1 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @s2 index 2 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @s3 index 3 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
func.func private @f(tensor<2xf32>) -> tensor<2xf32>
func.func private @b(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
