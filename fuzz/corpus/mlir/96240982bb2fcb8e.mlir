func.func @unary(%x: tensor<4x8xf32>, %m: tensor<4x8xi1>) -> (tensor<4x8xf32>, tensor<4x8xi1>) {
  %neg = nn.neg %x : tensor<4x8xf32>
  %rec = nn.reciprocal %neg : tensor<4x8xf32>
  %sqrt = nn.sqrt %rec : tensor<4x8xf32>
  %exp = nn.exp %sqrt : tensor<4x8xf32>
  %erf = nn.erf %exp : tensor<4x8xf32>
  %tanh = nn.tanh %erf : tensor<4x8xf32>
  %sig = nn.sigmoid %tanh : tensor<4x8xf32>
  %relu = nn.relu %sig : tensor<4x8xf32>
  %gelu = nn.gelu %relu : tensor<4x8xf32>
  %not = nn.not %m : tensor<4x8xi1>
  return %gelu, %not : tensor<4x8xf32>, tensor<4x8xi1>
}
