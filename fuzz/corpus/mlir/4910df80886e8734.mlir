//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'nn.parameter' op parameter 'both' needs exactly one of an initial value and an init rule}}
nn.parameter @both : tensor<2xf32> = dense<1.0> : tensor<2xf32> init zeros
