// expected-error @+1 {{two slots for input of stage 0}}
func.func private @duplicate_slots() attributes {arena = #gpipe.arena<size = 128, peak = 128, peak_at = 0, breakdown = <params = 0, grads = 0, optimizer = 0, kept = 128, scratch = 0, boundary = 0>, slots = [<input stage 0 at 0 size 64 x 1 stride 64>, <input stage 0 at 64 size 64 x 1 stride 64>]>}
