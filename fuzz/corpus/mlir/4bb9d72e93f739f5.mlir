func.func @sub(%x: tensor<4x3xf32>, %s: tensor<f32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.sub %x, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

func.func @mul(%x: tensor<4x3xf32>, %w: tensor<3xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// d(x / d) = dy / d and -dy * y / d.
func.func @div(%x: tensor<4x3xf32>, %d: tensor<4x3xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.div %x, %d : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// d(x ^ e) = dy * e * x ^ (e - 1) and dy * y * log(x) (positive bases).
func.func @pow(%x: tensor<4x3xf32>, %e: tensor<4x3xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %y = nn.pow %x, %e : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// A constant exponent gets no gradient: no log is built.
func.func @pow_constant_exponent(%x: tensor<4x3xf32>) -> tensor<4x3xf32> attributes {nn.differentiate} {
  %two = nn.constant dense<2.0> : tensor<f32>
  %y = nn.pow %x, %two : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
