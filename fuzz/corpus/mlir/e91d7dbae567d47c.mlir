// A [B, T, T] mask constant whose B slices are identical (a splat, and a
// repeated non-splat value) is cut to its first B/M slices; the
// unbatched [T, T] mask keeps its type.

module @batch_sized_constants {
  func.func @forward(%x: tensor<8x2x2xf32>) -> tensor<8x2x2xf32> {
    %zero = nn.constant dense<0.0> : tensor<8x2x2xf32>
    %rep = nn.constant dense<[[[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]], [[true, false], [true, true]]]> : tensor<8x2x2xi1>
    %tt = nn.constant dense<[[false, true], [false, false]]> : tensor<2x2xi1>
    %ninf = nn.constant dense<0xFF800000> : tensor<f32>
    %a = nn.add %x, %zero : (tensor<8x2x2xf32>, tensor<8x2x2xf32>) -> tensor<8x2x2xf32>
    %w = nn.where %rep, %a, %ninf : (tensor<8x2x2xi1>, tensor<8x2x2xf32>, tensor<f32>) -> tensor<8x2x2xf32>
    %y = nn.where %tt, %ninf, %w : (tensor<2x2xi1>, tensor<f32>, tensor<8x2x2xf32>) -> tensor<8x2x2xf32>
    return %y : tensor<8x2x2xf32>
  }
}
