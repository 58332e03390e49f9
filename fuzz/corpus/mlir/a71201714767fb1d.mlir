// Split and slice on the feature dim keep their sizes along it; the slice
// size on the batch dim goes from 8 to 2. Concat and unsqueeze move the batch
// with their dims.

module @split_slice_concat_feature_dim {
  func.func @forward(%x: tensor<8x12xf32>) -> tensor<8x14xf32> {
    %p:2 = nn.split %x {axis = 1, sizes = array<i64: 4, 8>} : tensor<8x12xf32> -> tensor<8x4xf32>, tensor<8x8xf32>
    %s = nn.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 8, 2>, strides = array<i64: 1, 2>} : tensor<8x12xf32> -> tensor<8x2xf32>
    %c = nn.concat %p#1, %s, %p#0 {axis = 1} : (tensor<8x8xf32>, tensor<8x2xf32>, tensor<8x4xf32>) -> tensor<8x14xf32>
    %u = nn.unsqueeze %c {axes = array<i64: 0, 2>} : tensor<8x14xf32> -> tensor<1x8x1x14xf32>
    %y = nn.reshape %u : tensor<1x8x1x14xf32> -> tensor<8x14xf32>
    return %y : tensor<8x14xf32>
  }
}
