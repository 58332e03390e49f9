//===----------------------------------------------------------------------===//
// Unary elementwise ops
//===----------------------------------------------------------------------===//

func.func @neg(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.neg %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @reciprocal(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.reciprocal %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @sqrt(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.sqrt %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @exp(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @log(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.log %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// d erf(x) = 2 / sqrt(pi) * exp(-x^2).
func.func @erf(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.erf %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @tanh(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.tanh %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.sigmoid %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// The gradient passes where the output is not 0.
func.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.relu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @gelu(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %y = nn.gelu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
