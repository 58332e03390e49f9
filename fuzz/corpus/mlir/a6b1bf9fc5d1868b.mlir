//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

func.func @binary_broadcasting(%a: tensor<4x1x8xf32>, %b: tensor<3x1xf32>, %s: tensor<f32>) -> tensor<4x3x8xf32> {
  %add = nn.add %a, %b : (tensor<4x1x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
  %sub = nn.sub %add, %s : (tensor<4x3x8xf32>, tensor<f32>) -> tensor<4x3x8xf32>
  %mul = nn.mul %s, %sub : (tensor<f32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  %div = nn.div %mul, %a : (tensor<4x3x8xf32>, tensor<4x1x8xf32>) -> tensor<4x3x8xf32>
  %pow = nn.pow %div, %s : (tensor<4x3x8xf32>, tensor<f32>) -> tensor<4x3x8xf32>
  return %pow : tensor<4x3x8xf32>
}
