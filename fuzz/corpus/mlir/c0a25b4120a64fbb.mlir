gpipe.pipeline @unknown_direction stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+2 {{expected ::mlir::gpipe::Direction to be one of: forward, backward}}
    // expected-error @+1 {{failed to parse GPipe_DirectionAttr parameter 'value' which is to be a `::mlir::gpipe::Direction`}}
    gpipe.send @s0 mb 0 sideways to 1 : tensor<4x8xf32>
  }
}
