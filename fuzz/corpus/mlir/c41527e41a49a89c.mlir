// expected-error @+2 {{unknown optimizer 'lamb' (expected sgd, momentum or adam)}}
// expected-error @+1 {{failed to parse GPipe_MemoryPlanAttr parameter 'optimizer'}}
gpipe.pipeline @bad_optimizer stages [] microbatches 1 schedule gpipe remat stage memory_plan <optimizer = lamb, alignment = 64, budget = 0, peak = 0, arena = 0, kept = []> {
}
