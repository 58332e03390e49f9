// Input of verify-schedule.mlir: a schedule with more findings than the
// verifier lists (17 micro-batches without a backward).
gpipe.pipeline @many_problems stages [@s0] microbatches 17 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.recompute @s0 mb 0
    gpipe.forward @s0 mb 1
    gpipe.recompute @s0 mb 1
    gpipe.forward @s0 mb 2
    gpipe.recompute @s0 mb 2
    gpipe.forward @s0 mb 3
    gpipe.recompute @s0 mb 3
    gpipe.forward @s0 mb 4
    gpipe.recompute @s0 mb 4
    gpipe.forward @s0 mb 5
    gpipe.recompute @s0 mb 5
    gpipe.forward @s0 mb 6
    gpipe.recompute @s0 mb 6
    gpipe.forward @s0 mb 7
    gpipe.recompute @s0 mb 7
    gpipe.forward @s0 mb 8
    gpipe.recompute @s0 mb 8
    gpipe.forward @s0 mb 9
    gpipe.recompute @s0 mb 9
    gpipe.forward @s0 mb 10
    gpipe.recompute @s0 mb 10
    gpipe.forward @s0 mb 11
    gpipe.recompute @s0 mb 11
    gpipe.forward @s0 mb 12
    gpipe.recompute @s0 mb 12
    gpipe.forward @s0 mb 13
    gpipe.recompute @s0 mb 13
    gpipe.forward @s0 mb 14
    gpipe.recompute @s0 mb 14
    gpipe.forward @s0 mb 15
    gpipe.recompute @s0 mb 15
    gpipe.forward @s0 mb 16
    gpipe.recompute @s0 mb 16
    gpipe.step @s0
  }
}
gpipe.stage @s0 index 0 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
func.func private @f(tensor<2xf32>) -> tensor<2xf32>
func.func private @b(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
