// A value used three times: its gradient is the sum of the uses'
// contributions, added in reverse op order (neg, then exp, then tanh), so the
// result is the same bit for bit on every run.

func.func @three_uses(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  %a = nn.tanh %x : tensor<4xf32>
  %b = nn.exp %x : tensor<4xf32>
  %c = nn.neg %x : tensor<4xf32>
  %ab = nn.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %abc = nn.add %ab, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %abc : tensor<4xf32>
}
