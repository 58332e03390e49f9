func.func @cross_entropy_grad(%logits: tensor<2x16x32xf32>, %labels: tensor<2x16xi64>, %dl: tensor<f32>, %v: tensor<10xf64>, %c: tensor<i32>, %dv: tensor<f64>) -> (tensor<2x16x32xf32>, tensor<10xf64>) {
  %g = nn.cross_entropy_grad %logits, %labels, %dl : (tensor<2x16x32xf32>, tensor<2x16xi64>, tensor<f32>) -> tensor<2x16x32xf32>
  %gv = nn.cross_entropy_grad %v, %c, %dv : (tensor<10xf64>, tensor<i32>, tensor<f64>) -> tensor<10xf64>
  return %g, %gv : tensor<2x16x32xf32>, tensor<10xf64>
}
