//===----------------------------------------------------------------------===//
// Indexing and shapes
//===----------------------------------------------------------------------===//

// The table gets the rows scatter-added; the indices nothing.
func.func @gather(%table: tensor<10x4xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> attributes {nn.differentiate} {
  %y = nn.gather %table, %ids {axis = 0} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}
