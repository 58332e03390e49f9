func.func @gelu_grad(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %h: tensor<8xbf16>) -> (tensor<4x8xf32>, tensor<8xbf16>) {
  %dx = nn.gelu_grad %x, %dy : tensor<4x8xf32>
  %dh = nn.gelu_grad %h, %h : tensor<8xbf16>
  return %dx, %dh : tensor<4x8xf32>, tensor<8xbf16>
}
