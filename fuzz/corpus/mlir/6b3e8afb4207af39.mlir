func.func @layer_no_inputs() -> tensor<4xf32> {
  %h = nn.layer "const" () : () -> tensor<4xf32> {
    %c = nn.constant dense<1.0> : tensor<4xf32>
    nn.yield %c : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}

// The resource blob of @parameter_dense_resource prints once, after the last
// module.
