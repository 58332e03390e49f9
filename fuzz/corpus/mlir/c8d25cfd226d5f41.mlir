func.func @program_outside_pipeline() {
  // expected-error @+1 {{'gpipe.program' op expects parent op 'gpipe.pipeline'}}
  "gpipe.program"() <{rank = 0 : i64}> ({
  }) : () -> ()
  return
}
