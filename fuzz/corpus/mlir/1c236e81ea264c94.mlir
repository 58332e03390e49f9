// A residual block keeps two activations live until its add, so it is one
// layer; the common scope "blocks.0" names it.

nn.parameter @"stem.weight" : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @"blocks.0.ln.weight" : tensor<32xf32> init ones
nn.parameter @"blocks.0.fc.weight" : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @"head.weight" : tensor<4x32xf32> init normal(2.0e-02)


// OP-LABEL: func.func @residual_block_stays_whole
// OP:         nn.layer "stem"
// OP:         nn.layer "blocks.0"
// OP:         nn.layer "head"
func.func @residual_block_stays_whole(%x: tensor<8x32xf32>) -> tensor<8x4xf32> {
  %ws = nn.param @"stem.weight" : tensor<32x32xf32>
  %s = nn.linear %x, %ws {transpose_weight = true} : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32> loc("/stem/Gemm")
  %g = nn.param @"blocks.0.ln.weight" : tensor<32xf32>
  %ln = nn.layer_norm %s, %g {axis = 1} : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("/blocks.0/ln/LayerNorm")
  %wf = nn.param @"blocks.0.fc.weight" : tensor<32x32xf32>
  %fc = nn.linear %ln, %wf {transpose_weight = true} : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32> loc("/blocks.0/fc/Gemm")
  %r = nn.add %s, %fc : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("/blocks.0/Add")
  %wh = nn.param @"head.weight" : tensor<4x32xf32>
  %y = nn.linear %r, %wh {transpose_weight = true} : (tensor<8x32xf32>, tensor<4x32xf32>) -> tensor<8x4xf32> loc("/head/Gemm")
  return %y : tensor<8x4xf32>
}
