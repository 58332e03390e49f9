//===----------------------------------------------------------------------===//
// gpipe.pipeline and gpipe.program
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'gpipe.pipeline' op expected at least one stage}}
gpipe.pipeline @no_stages stages [] microbatches 2 schedule gpipe remat stage {
}
