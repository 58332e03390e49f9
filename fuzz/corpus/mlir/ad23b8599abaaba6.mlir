//===----------------------------------------------------------------------===//
// The memory plan attributes
//===----------------------------------------------------------------------===//

// expected-error @+1 {{expected at least one copy, got 0}}
func.func private @zero_copies() attributes {slot = #gpipe.slot<input stage 0 at 0 size 64 x 0 stride 64>}
