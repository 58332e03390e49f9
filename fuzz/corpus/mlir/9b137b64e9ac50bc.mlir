// BAD: for the --granularity option: unknown granularity 'coarse' (expected scope, anchor or op)

// A Linear/ReLU chain: one layer per Linear+ReLU pair by default, one per op
// with granularity=op. Layer names come from the ONNX-style name scopes.

nn.parameter @"0.weight" : tensor<32x16xf32> init normal(2.0e-02)
nn.parameter @"2.weight" : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @"4.weight" : tensor<10x32xf32> init normal(2.0e-02)


// OP-LABEL: func.func @linear_relu_pairs
// OP-COUNT-5:  nn.layer
// OP-NOT:      nn.layer
func.func @linear_relu_pairs(%x: tensor<8x16xf32>) -> tensor<8x10xf32> {
  %w0 = nn.param @"0.weight" : tensor<32x16xf32>
  %h0 = nn.linear %x, %w0 {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32> loc("/0/Gemm")
  %a0 = nn.relu %h0 : tensor<8x32xf32> loc("/1/Relu")
  %w2 = nn.param @"2.weight" : tensor<32x32xf32>
  %h2 = nn.linear %a0, %w2 {transpose_weight = true} : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32> loc("/2/Gemm")
  %a2 = nn.relu %h2 : tensor<8x32xf32> loc("/3/Relu")
  %w4 = nn.param @"4.weight" : tensor<10x32xf32>
  %y = nn.linear %a2, %w4 {transpose_weight = true} : (tensor<8x32xf32>, tensor<10x32xf32>) -> tensor<8x10xf32> loc("/4/Gemm")
  return %y : tensor<8x10xf32>
}
