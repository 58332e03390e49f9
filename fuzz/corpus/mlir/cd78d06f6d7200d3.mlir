// A function that already has layers is left as it is.

func.func @already_layered(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = nn.layer "mine"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %s = nn.relu %a : tensor<4xf32>
    nn.yield %s : tensor<4xf32>
  }
  %t = nn.relu %r : tensor<4xf32>
  return %t : tensor<4xf32>
}
