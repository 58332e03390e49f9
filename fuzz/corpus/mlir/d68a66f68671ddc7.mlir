func.func @unary_low_precision(%h: tensor<8xf16>, %b: tensor<8xbf16>, %d: tensor<8xf64>) -> (tensor<8xf16>, tensor<8xbf16>, tensor<8xf64>) {
  %0 = nn.gelu %h : tensor<8xf16>
  %1 = nn.relu %b : tensor<8xbf16>
  %2 = nn.tanh %d : tensor<8xf64>
  return %0, %1, %2 : tensor<8xf16>, tensor<8xbf16>, tensor<8xf64>
}
