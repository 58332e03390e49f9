// Only float results get a seed and only float inputs a gradient; a
// parameter read that no gradient reaches gets zeros. With a loss scale,
// every seed is scaled by one shared constant.

nn.parameter @scale : tensor<3xf32> init ones
nn.parameter @idle : tensor<3xf32> init zeros


// SCALE-LABEL: func.func @mixed_results_bwd
// SCALE-SAME:    (%{{.*}}: tensor<3xf32>, %{{.*}}: tensor<3xi64>, %[[DY:.*]]: tensor<3xf32>, %[[DS:.*]]: tensor<3xf32>)
// SCALE:         %[[C:.*]] = nn.constant dense<2.500000e-01> : tensor<f32>
// SCALE-NEXT:    nn.mul %[[DY]], %[[C]]
// SCALE-NEXT:    nn.mul %[[DS]], %[[C]]
func.func @mixed_results(%x: tensor<3xf32>, %ids: tensor<3xi64>) -> (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) attributes {nn.differentiate} {
  %s = nn.param @scale : tensor<3xf32>
  %i = nn.param @idle : tensor<3xf32>
  %one = nn.constant dense<1> : tensor<i64>
  %m = nn.equal %ids, %one : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %y = nn.mul %x, %s : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %m, %y, %s : tensor<3xi1>, tensor<3xf32>, tensor<3xf32>
}
