//===----------------------------------------------------------------------===//
// gpipe.remat
//===----------------------------------------------------------------------===//

func.func @remat_none(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'gpipe.remat' op re-materializes under remat policy none, which keeps every activation instead}}
  %r = gpipe.remat none -> tensor<4xf32> {
    %y = nn.relu %x : tensor<4xf32>
    gpipe.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
