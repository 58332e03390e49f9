// expected-error @+1 {{expected stage -1 exactly for the rank's scratch slot, got scratch of stage 0}}
func.func private @scratch_of_a_stage() attributes {slot = #gpipe.slot<scratch stage 0 at 0 size 64 x 1 stride 64>}
