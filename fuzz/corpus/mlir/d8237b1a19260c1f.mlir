// The dialect's discardable attributes are verified.

// expected-error @+1 {{'nn.saved_count' must be a non-negative integer on a 'func.func', got -1 : i64}}
func.func private @negative_saved() attributes {nn.saved_count = -1 : i64}
