// Functions without the marker are left alone.

func.func @not_marked(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
