// Input of import-schedule.mlir: four stages, two micro-batches, for an
// interleaved placement on two ranks.
gpipe.pipeline @interleaved stages [@i0, @i1, @i2, @i3] microbatches 2 schedule gpipe remat stage {
}
gpipe.stage @i0 index 0 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @i1 index 1 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @i2 index 2 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @i3 index 3 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
func.func private @f(tensor<2xf32>) -> tensor<2xf32>
func.func private @b(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
