// nn-microbatch with M = 4: the batch, dim 0 of every argument of @forward,
// goes from 8 to 2 in every tensor that carries it. Each case is a module
// named for what it tests. With M = 1 nothing changes; M = 0 is an error.

// ZERO: error: expected a positive number of micro-batches, got 0

// Elementwise ops with a broadcast parameter and scalar constant: the
// parameter and the constant keep their types. Only @forward (the func=
// option's default) is rewritten.


// M = 1 is the identity.
// ONE-LABEL: module @elementwise_broadcast_param
// ONE:         func.func @forward(%{{.*}}: tensor<8x16xf32>) -> tensor<8x16xf32>
// ONE:           nn.add %{{.*}}, %{{.*}} : (tensor<16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
module @elementwise_broadcast_param {
  nn.parameter @bias : tensor<16xf32> init zeros
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %b = nn.param @bias : tensor<16xf32>
    %c = nn.constant dense<5.000000e-01> : tensor<f32>
    %a = nn.add %b, %x : (tensor<16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %m = nn.mul %a, %c : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
    %r = nn.relu %m : tensor<8x16xf32>
    return %r : tensor<8x16xf32>
  }
  func.func @network(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %b = nn.param @bias : tensor<16xf32>
    %a = nn.add %b, %x : (tensor<16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %a : tensor<8x16xf32>
  }
}
