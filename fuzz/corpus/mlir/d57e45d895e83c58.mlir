//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// dA = dY @ B^T and dB = A^T @ dY, summed over the batch dims each operand
// was broadcast along.
func.func @matmul_batched_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32> attributes {nn.differentiate} {
  %y = nn.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32>
  return %y : tensor<2x5x3x2xf32>
}

// A 2-D right operand: the input gradient is a linear layer and the weight
// gradient one GEMM over the flattened rows.
func.func @matmul_weight(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>) -> tensor<2x3x5xf32> attributes {nn.differentiate} {
  %y = nn.matmul %x, %w : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// The transposes fold into the GEMM flags; alpha scales both products, beta
// the addend's (reduced) gradient.
func.func @gemm(%a: tensor<4x3xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> attributes {nn.differentiate} {
  %y = nn.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = true, trans_b = true} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

func.func @gemm_plain(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> attributes {nn.differentiate} {
  %y = nn.gemm %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

func.func @linear(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>, %b: tensor<5xf32>) -> tensor<2x3x5xf32> attributes {nn.differentiate} {
  %y = nn.linear %x, %w, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// PyTorch's [out, in] layout: dx = dy @ W, dW = dy^T @ x.
func.func @linear_transposed(%x: tensor<3x4xf32>, %w: tensor<5x4xf32>) -> tensor<3x5xf32> attributes {nn.differentiate} {
  %y = nn.linear %x, %w {transpose_weight = true} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
