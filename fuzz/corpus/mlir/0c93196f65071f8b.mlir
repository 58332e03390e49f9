// expected-error @+1 {{unknown nn attribute 'nn.sved_count'}}
func.func private @typo() attributes {nn.sved_count = 1 : i64}
