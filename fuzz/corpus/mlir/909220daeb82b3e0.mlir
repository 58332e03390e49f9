// Rank 0 sends stage 0's activation to rank 2, which runs stage 2, instead
// of rank 1: a wrong peer, and a three-rank wait cycle.

gpipe.pipeline @wrong_peer stages [@t0, @t1, @t2] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @t0 mb 0
    // expected-error @+2 {{rank 0 action 1 (0SEND_F0 to rank 2): expected peer rank 1, the rank of stage 1}}
    // expected-error @+1 {{deadlock: rank 0 waits for rank 2 (action 1, 0SEND_F0 to rank 2), rank 2 waits for rank 1 (action 0, 2RECV_F0 from rank 1), rank 1 waits for rank 0 (action 0, 1RECV_F0 from rank 0)}}
    gpipe.send @t0 mb 0 forward to 2 : tensor<2xf32>
    gpipe.recv @t0 mb 0 backward from 1 : tensor<2xf32>
    gpipe.backward @t0 mb 0
    gpipe.step @t0
  }
  gpipe.program rank 1 {
    // expected-note @+1 {{rank 1 waits here for rank 0 (1RECV_F0 from rank 0)}}
    gpipe.recv @t1 mb 0 forward from 0 : tensor<2xf32>
    gpipe.forward @t1 mb 0
    gpipe.send @t1 mb 0 forward to 2 : tensor<2xf32>
    gpipe.recv @t1 mb 0 backward from 2 : tensor<2xf32>
    gpipe.backward @t1 mb 0
    gpipe.send @t1 mb 0 backward to 0 : tensor<2xf32>
    gpipe.step @t1
  }
  gpipe.program rank 2 {
    // expected-note @+1 {{rank 2 waits here for rank 1 (2RECV_F0 from rank 1)}}
    gpipe.recv @t2 mb 0 forward from 1 : tensor<2xf32>
    gpipe.forward @t2 mb 0
    gpipe.backward @t2 mb 0
    gpipe.send @t2 mb 0 backward to 1 : tensor<2xf32>
    gpipe.step @t2
  }
}
gpipe.stage @t0 index 0 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @t1 index 1 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
gpipe.stage @t2 index 2 : tensor<2xf32> -> tensor<2xf32> forward @f backward @b
func.func private @f(tensor<2xf32>) -> tensor<2xf32>
func.func private @b(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
