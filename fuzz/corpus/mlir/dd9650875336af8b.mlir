// expected-error @+1 {{expected a stride of at least the size 64, got 32}}
func.func private @overlapping_copies() attributes {slot = #gpipe.slot<input stage 0 at 0 size 64 x 2 stride 32>}
