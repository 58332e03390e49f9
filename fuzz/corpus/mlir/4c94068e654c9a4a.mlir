// `func` names the network function; others are left alone.

// HEAD-LABEL: func.func @forward
// HEAD-SAME:    (%{{.*}}: tensor<4x3xf64>) -> tensor<4x3xf64>
// HEAD-LABEL: func.func @head
// HEAD-SAME:    (%[[X:.*]]: tensor<4x3xf64>, %[[LABELS:.*]]: tensor<4xi64>) -> tensor<f64>
// HEAD:         %[[LOSS:.*]] = nn.cross_entropy %[[X]], %[[LABELS]] : (tensor<4x3xf64>, tensor<4xi64>) -> tensor<f64>
// HEAD:         return %[[LOSS]]
func.func @forward(%x: tensor<4x3xf64>) -> tensor<4x3xf64> {
  return %x : tensor<4x3xf64>
}
func.func @head(%x: tensor<4x3xf64>) -> tensor<4x3xf64> {
  return %x : tensor<4x3xf64>
}
