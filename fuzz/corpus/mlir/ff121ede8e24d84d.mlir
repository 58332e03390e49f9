// Round-trip of every nn op in its custom assembly form.

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

nn.parameter @"w.inline" : tensor<2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
func.func @parameter_inline_value() -> tensor<2x2xf32> {
  %w = nn.param @"w.inline" : tensor<2x2xf32>
  return %w : tensor<2x2xf32>
}
