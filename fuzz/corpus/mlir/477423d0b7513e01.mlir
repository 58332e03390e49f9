func.func @layer_norm(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %g2: tensor<16x32xf32>) -> tensor<2x16x32xf32> {
  %y0 = nn.layer_norm %x, %g, %b {axis = 2, epsilon = 1.0e-05 : f32} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  %y1 = nn.layer_norm %y0, %g2 {axis = 1, epsilon = 1.0e-06 : f32} : (tensor<2x16x32xf32>, tensor<16x32xf32>) -> tensor<2x16x32xf32>
  return %y1 : tensor<2x16x32xf32>
}
