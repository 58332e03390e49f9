func.func @remat_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'gpipe.remat' op yields 'tensor<4xf32>' but returns 'tensor<2xf32>'}}
  %r = gpipe.remat stage -> tensor<2xf32> {
    %y = nn.relu %x : tensor<4xf32>
    gpipe.yield %y : tensor<4xf32>
  }
  return %x : tensor<4xf32>
}
