// Consecutive cut segments of one module form one layer: the attention and
// MLP halves of a transformer block each end in a residual add (a cut point)
// but share the scope "blocks.0". With granularity=op they stay apart.

nn.parameter @"blocks.0.attn.weight" : tensor<8x8xf32> init normal(2.0e-02)
nn.parameter @"blocks.0.mlp.weight" : tensor<8x8xf32> init normal(2.0e-02)


// ANCHOR-LABEL: func.func @block_halves_form_one_layer
// ANCHOR:         nn.layer "blocks.0"
// ANCHOR:         nn.layer "blocks.0_1"

// OP-LABEL: func.func @block_halves_form_one_layer
// OP:         nn.layer "blocks.0"
// OP:         nn.layer "blocks.0_1"
func.func @block_halves_form_one_layer(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wa = nn.param @"blocks.0.attn.weight" : tensor<8x8xf32>
  %a = nn.linear %x, %wa {transpose_weight = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/attn/Linear")
  %r1 = nn.add %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/Add")
  %wm = nn.param @"blocks.0.mlp.weight" : tensor<8x8xf32>
  %m = nn.linear %r1, %wm {transpose_weight = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/mlp/Linear")
  %r2 = nn.add %r1, %m : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/Add_1")
  return %r2 : tensor<4x8xf32>
}
