//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

func.func @layer_single_input(%x: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  %h = nn.layer "blocks.0" (%x) : (tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  ^bb0(%a: tensor<2x16x32xf32>):
    %r = nn.relu %a : tensor<2x16x32xf32>
    nn.yield %r : tensor<2x16x32xf32>
  }
  return %h : tensor<2x16x32xf32>
}
