// Option errors, each located at the network function (more in
// partition-*.mlir, one file per error).

// BALANCE: error: balance lists 3 stages but the pipeline has 2

nn.parameter @w0 : tensor<64x16xf32> init normal(2.0e-02)
nn.parameter @w1 : tensor<16x64xf32> init normal(2.0e-02)

// expected-error @+1 {{expected at least 1 stage, got 0}}
func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = nn.layer "a"(%x) : (tensor<4x16xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %w = nn.param @w0 : tensor<64x16xf32>
    %h = nn.linear %a, %w {transpose_weight = true} : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
    nn.yield %h : tensor<4x64xf32>
  }
  %1 = nn.layer "b"(%0) : (tensor<4x64xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %w = nn.param @w1 : tensor<16x64xf32>
    %h = nn.linear %a, %w {transpose_weight = true} : (tensor<4x64xf32>, tensor<16x64xf32>) -> tensor<4x16xf32>
    nn.yield %h : tensor<4x16xf32>
  }
  return %1 : tensor<4x16xf32>
}
