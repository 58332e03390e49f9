// Cost estimates on the stages, extra attributes on a pipeline and a program,
// and stage 0 whose backward returns no input gradient (its input is data).

gpipe.pipeline @with_attributes stages [@a, @b] microbatches 1 schedule gpipe remat stage attributes {note = "x"} {
  gpipe.program rank 0 attributes {device = 0 : i64} {
    gpipe.forward @a mb 0 {tag}
    gpipe.send @a mb 0 forward to 1 : tensor<4x2x8xbf16>
  }
  gpipe.program rank 1 {
    gpipe.recv @b mb 0 forward from 0 : tensor<4x2x8xbf16>
  }
}
gpipe.stage @a index 0 : tensor<4x2xi64> -> tensor<4x2x8xbf16> forward @fa backward @ba {forward_time = 2.0e-03 : f64, backward_time = 4.0e-03 : f64}
gpipe.stage @b index 1 : tensor<4x2x8xbf16> -> tensor<f32> forward @fb backward @bb
func.func private @fa(tensor<4x2xi64>) -> tensor<4x2x8xbf16>
func.func private @ba(tensor<4x2xi64>, tensor<4x2x8xbf16>) -> tensor<10x8xbf16>
func.func private @fb(tensor<4x2x8xbf16>, tensor<4x2xi64>) -> tensor<f32>
func.func private @bb(tensor<4x2x8xbf16>, tensor<4x2xi64>, tensor<f32>) -> tensor<4x2x8xbf16>
