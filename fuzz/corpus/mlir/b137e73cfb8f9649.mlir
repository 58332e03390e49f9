// expected-error @+1 {{cannot cut 1 layers into 2 stages}}
func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = nn.layer "only"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %r = nn.relu %a : tensor<4x16xf32>
    nn.yield %r : tensor<4x16xf32>
  }
  return %0 : tensor<4x16xf32>
}
