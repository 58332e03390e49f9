//===----------------------------------------------------------------------===//
// Selection and casts: masks, conditions and integers get no gradient
//===----------------------------------------------------------------------===//

func.func @where_equal_not(%x: tensor<2x4xf32>, %fill: tensor<f32>, %ids: tensor<2x4xi64>) -> tensor<2x4xf32> attributes {nn.differentiate} {
  %zero = nn.constant dense<0> : tensor<i64>
  %pad = nn.equal %ids, %zero : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
  %keep = nn.not %pad : tensor<2x4xi1>
  %y = nn.where %keep, %x, %fill : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// Float to float casts back; the boolean input gets nothing.
func.func @cast(%x: tensor<4xf32>, %m: tensor<4xi1>) -> tensor<4xf16> attributes {nn.differentiate} {
  %h = nn.cast %x : tensor<4xf32> -> tensor<4xf16>
  %mf = nn.cast %m : tensor<4xi1> -> tensor<4xf16>
  %y = nn.mul %h, %mf : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}
