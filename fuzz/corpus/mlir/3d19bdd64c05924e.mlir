// Cross-entropy needs a class dim; mse takes a scalar prediction.

// MSE-LABEL: func.func @forward(%{{.*}}: tensor<f32>, %{{.*}}: tensor<f32>) -> tensor<f32>
// MSE-NEXT:    %[[LOSS:.*]] = nn.mse %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// MSE-NEXT:    return %[[LOSS]]

// expected-error @+1 {{'func.func' op cannot attach a cross-entropy loss to a result of type 'tensor<f32>': expected logits with a class dim}}
func.func @forward(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
