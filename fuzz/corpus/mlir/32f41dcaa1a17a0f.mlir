func.func @layer_norm_grad(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %dy: tensor<2x16x32xf32>, %g2: tensor<16x32xf32>) -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy {axis = 2, epsilon = 1.0e-05 : f32} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %dx2, %dg2, %db2 = nn.layer_norm_grad %x, %g2, %dx {axis = 1, epsilon = 1.0e-06 : f32} : (tensor<2x16x32xf32>, tensor<16x32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>)
  return %dx2, %dg, %db, %dg2, %db2 : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}
