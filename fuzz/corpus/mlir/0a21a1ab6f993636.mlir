// The runs with other options fail on some cases (the error cases at the end
// under mse, every case without @head under func=head): they check only the
// functions they rewrote.

// UNKNOWN: for the --loss option: unknown loss 'hinge' (expected cross-entropy or mse)
// MISSING: error: no function named 'missing' to attach the loss to

// A classifier's logits [batch, classes] take integer labels [batch]; the
// loss op is located at "/loss/CrossEntropy" so layer formation names it.


// MSE-LABEL: func.func @forward
// MSE-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[TARGET:.*]]: tensor<8x10xf32>) -> tensor<f32>
// MSE:         %[[Y:.*]] = nn.linear %[[X]]
// MSE:         %[[LOSS:.*]] = nn.mse %[[Y]], %[[TARGET]] : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
// MSE:         return %[[LOSS]] : tensor<f32>
nn.parameter @"fc.weight" : tensor<10x16xf32> init normal(2.0e-02)
func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x10xf32> {
  %w = nn.param @"fc.weight" : tensor<10x16xf32>
  %y = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}
