// expected-error @+1 {{the network has no layers to cut into stages: no op computes its output from its input (gpipe-opt: run nn-form-layers first)}}
func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  return %x : tensor<4x16xf32>
}
