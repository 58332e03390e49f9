// expected-error @+2 {{expected ::mlir::gpipe::ScheduleKind to be one of: gpipe, 1f1b, custom}}
// expected-error @+1 {{failed to parse GPipe_ScheduleKindAttr parameter 'value' which is to be a `::mlir::gpipe::ScheduleKind`}}
gpipe.pipeline @unknown_schedule stages [@s0, @s1] microbatches 2 schedule zero_bubble remat stage {
}
