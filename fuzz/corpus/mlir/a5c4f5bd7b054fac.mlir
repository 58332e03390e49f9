nn.parameter @"fc.weight" : tensor<32x16xf32> init normal(2.0e-02)
func.func @layer_multiple_inputs(%x: tensor<8x16xf32>, %m: tensor<8x32xi1>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %h:2 = nn.layer "fc" (%x, %m) : (tensor<8x16xf32>, tensor<8x32xi1>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  ^bb0(%a: tensor<8x16xf32>, %b: tensor<8x32xi1>):
    %w = nn.param @"fc.weight" : tensor<32x16xf32>
    %z = nn.constant dense<0.0> : tensor<f32>
    %l = nn.linear %a, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
    %s = nn.where %b, %l, %z : (tensor<8x32xi1>, tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
    nn.yield %l, %s : tensor<8x32xf32>, tensor<8x32xf32>
  }
  return %h#0, %h#1 : tensor<8x32xf32>, tensor<8x32xf32>
}
