// Re-materialization is visible in the IR: with remat=stage every stage's
// backward re-runs its forward inside one `gpipe.remat stage` region (the
// parameter reads stay outside), then the gradient ops read what the region
// yields. With remat=none the forward saves those values instead: no
// region anywhere.

// STAGE-LABEL: func.func @train_s0_bwd(
// STAGE-NOT:     func.func
// STAGE:         gpipe.remat stage -> {{.*}} {
// STAGE-NOT:       nn.param
// STAGE:           gpipe.yield
// STAGE-NEXT:    }
// STAGE-LABEL: func.func @train_s1_bwd(
// STAGE-NOT:     func.func
// STAGE:         gpipe.remat stage -> {{.*}} {
// STAGE:           nn.layer_norm
// STAGE:           gpipe.yield
// STAGE-NEXT:    }

// NONE-NOT: gpipe.remat
// NONE: func.func @train_s0_bwd({{.*}} attributes {{{.*}}nn.saved_count
// NONE-NOT: gpipe.remat

// The MLP's first stage: Linear + ReLU recomputed, the ReLU mask computed
// from what the region yields.
// MLP-LABEL: func.func @train_s0_bwd(
// MLP-NEXT:    %[[W:.*]] = nn.param @"0.weight"
// MLP-NEXT:    %[[B:.*]] = nn.param @"0.bias"
// MLP-NEXT:    %[[Y:.*]] = gpipe.remat stage -> tensor<4x8xf32> {
// MLP-NEXT:      %[[L:.*]] = nn.linear %arg0, %[[W]], %[[B]]
// MLP-NEXT:      %[[R:.*]] = nn.relu %[[L]]
// MLP-NEXT:      gpipe.yield %[[R]] : tensor<4x8xf32>
// MLP-NEXT:    }
// MLP:         nn.equal %[[Y]],
