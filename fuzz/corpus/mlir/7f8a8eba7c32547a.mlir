// A parameter the network never reads (an ONNX initializer nothing
// consumes, a dropout ratio, an untied head) would be trained by no rank
// and the library could not be loaded: the partition drops it with a
// warning, and the library loads and trains.

// WARN: warning: parameter 'head.unused' is not used by the network; it is dropped (no stage trains it)
// TRAIN: loss: {{.*}} over 2 steps
