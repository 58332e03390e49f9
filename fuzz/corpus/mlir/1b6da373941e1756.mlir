// expected-error @+1 {{'gpipe.pipeline' op expected at most 2147483647 micro-batches, got 4294967296}}
gpipe.pipeline @too_many_microbatches stages [@s0, @s1] microbatches 4294967296 schedule gpipe remat stage {
}
