// Two network inputs live at once: the first layer takes both. The same
// scope appearing again after another one gets a numbered name.

func.func @two_inputs_and_repeated_names(%ids: tensor<2x4xi64>, %mask: tensor<2x4x8xi1>) -> tensor<2x4x8xf32> {
  %t = nn.param @table : tensor<16x8xf32>
  %e = nn.gather %t, %ids {axis = 0} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32> loc("/emb/Gather")
  %z = nn.constant dense<0.0> : tensor<f32>
  %m = nn.where %mask, %e, %z : (tensor<2x4x8xi1>, tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32> loc("/emb/Where")
  %n1 = nn.softmax %m {axis = 2} : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("/norm/Softmax")
  %n2 = nn.softmax %n1 {axis = 2} : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("/mid/Softmax")
  %n3 = nn.softmax %n2 {axis = 2} : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("/norm/Softmax_1")
  return %n3 : tensor<2x4x8xf32>
}
nn.parameter @table : tensor<16x8xf32> init normal(1.0)
