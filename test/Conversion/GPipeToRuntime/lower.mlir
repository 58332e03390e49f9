// Lowering of a two-stage, two-micro-batch MLP pipeline to runtime calls.
// RUN: gpipe-opt %s --gpipe-pipeline="stages=2 microbatches=2" --convert-gpipe-to-runtime="source=lower.mlir" | FileCheck %s
// The CUDA target: the same program against the gpipe_rt_cuda_* library;
// the generated code never touches a buffer itself.
// RUN: gpipe-opt %s --gpipe-pipeline="stages=2 microbatches=2" --convert-gpipe-to-runtime="target=cuda" | FileCheck %s --check-prefix=CUDA
// CUDA-NOT: gpipe_rt_cpu_
// CUDA-NOT: llvm.load
// CUDA-NOT: llvm.store {{.*}} : f32
// CUDA: llvm.call @gpipe_rt_cuda_linear_f32(
// CUDA: llvm.call @gpipe_rt_cuda_cross_entropy_grad_at_f32(
// CUDA: llvm.call @gpipe_rt_cuda_accumulate_f32(
// CUDA: llvm.call @gpipe_rt_cuda_fill_f32(
// CUDA: \22target\22:\22cuda\22
// RUN: not gpipe-opt %s --gpipe-pipeline="stages=2 microbatches=2" --convert-gpipe-to-runtime="target=tpu" 2>&1 | FileCheck %s --check-prefix=BADTARGET
// BADTARGET: unknown target 'tpu' (expected cpu or cuda)
// bf16: every GEMM, forward and backward, calls its _bf16 twin with the
// same arguments; nothing else changes.
// RUN: gpipe-opt %s --gpipe-pipeline="stages=2 microbatches=2" --convert-gpipe-to-runtime="precision=bf16" | FileCheck %s --check-prefix=BF16 --implicit-check-not=linear_f32 --implicit-check-not=gemm_f32 --implicit-check-not=matmul_f32
// BF16: llvm.call @gpipe_rt_cpu_linear_bf16(
// BF16: llvm.call @gpipe_rt_cpu_gemm_bf16(
// BF16: llvm.call @gpipe_rt_cpu_accumulate_f32(
// BF16: \22precision\22:\22bf16\22
// RUN: gpipe-opt %s --gpipe-pipeline="stages=2 microbatches=2" --convert-gpipe-to-runtime="target=cuda precision=bf16" | FileCheck %s --check-prefix=CUDABF16
// CUDABF16: llvm.call @gpipe_rt_cuda_linear_bf16(
// RUN: not gpipe-opt %s --gpipe-pipeline="stages=2 microbatches=2" --convert-gpipe-to-runtime="precision=fp16" 2>&1 | FileCheck %s --check-prefix=BADPRECISION
// BADPRECISION: unknown precision 'fp16' (expected fp32 or bf16)

// Nothing but the LLVM dialect is left.
// CHECK-NOT: nn.
// CHECK-NOT: gpipe.
// CHECK-NOT: func.func

// Stage 0's forward: linear into the scratch region, then ReLU straight into
// the output buffer the send reads (the last of the function's 7 pointer
// arguments).
// CHECK: llvm.func internal @__gpipe_train_s0_fwd(%[[RANK:.*]]: !llvm.ptr, %[[MB:.*]]: i64, %[[SCRATCH:.*]]: !llvm.ptr, %[[PARAMS:.*]]: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i32, %[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr) -> i32
// CHECK: llvm.call @gpipe_rt_cpu_linear_f32(%[[IN]], {{.*}}, %[[PARAMS]], {{.*}}, %[[SCRATCH]], {{.*}})
// CHECK: llvm.call @gpipe_rt_cpu_unary_f32(%{{.*}}, %[[SCRATCH]], %[[OUT]], %{{.*}})
// A failing kernel reports its call site and returns its status.
// CHECK: ^bb{{[0-9]+}}(%[[STATUS:.*]]: i32, %[[SITE:.*]]: i64):
// CHECK-NEXT: llvm.call @gpipe_rt_kernel_error(%[[RANK]], %[[SITE]], %[[STATUS]])
// CHECK-NEXT: llvm.return %[[STATUS]]

// Stage 0's backward accumulates its parameter gradients in micro-batch
// order: the i32 `first` flag selects copy or add.
// CHECK-LABEL: llvm.func internal @__gpipe_train_s0_bwd(
// CHECK-SAME: %[[GRADS:[a-z0-9]+]]: !llvm.ptr, %[[FIRST:[a-z0-9]+]]: i32, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr,
// CHECK: llvm.call @gpipe_rt_cpu_gemm_f32(
// CHECK: llvm.call @gpipe_rt_cpu_accumulate_f32(%[[GRADS]], %{{.*}}, %{{.*}}, %[[FIRST]])

// The last stage's forward reports its loss instead of storing it.
// CHECK-LABEL: llvm.func internal @__gpipe_train_s1_fwd(
// CHECK: llvm.call @gpipe_rt_cpu_cross_entropy_f32(
// CHECK: llvm.call @gpipe_rt_report_loss(

// Rank 0's program: F0 (data load, forward), SEND_F0, F1, SEND_F1, RECV_B0,
// B0, RECV_B1, B1, STEP; every action bracketed by begin/end with its index.
// CHECK: llvm.func @gpipe_model_rank_0(%[[R:.*]]: !llvm.ptr, %[[ARENA:.*]]: !llvm.ptr) -> i32
// CHECK: llvm.call @gpipe_rt_action_begin(%[[R]], %{{.*}})
// CHECK: llvm.call @gpipe_rt_load_input(%[[R]],
// CHECK: llvm.call @__gpipe_train_s0_fwd(
// CHECK: llvm.call @gpipe_rt_action_end(
// CHECK: llvm.call @gpipe_rt_send(
// CHECK: llvm.call @__gpipe_train_s0_fwd(
// CHECK: llvm.call @gpipe_rt_send(
// CHECK: llvm.call @gpipe_rt_recv(
// CHECK: llvm.call @__gpipe_train_s0_bwd(
// CHECK: llvm.call @gpipe_rt_recv(
// CHECK: llvm.call @__gpipe_train_s0_bwd(
// CHECK: llvm.call @gpipe_rt_optimizer_step(%[[R]],
// CHECK: llvm.return

// Rank 1 loads the labels and seeds its backward with 1.0.
// CHECK-LABEL: llvm.func @gpipe_model_rank_1(
// CHECK: llvm.call @gpipe_rt_recv(
// CHECK: llvm.call @gpipe_rt_load_labels(
// CHECK: llvm.call @__gpipe_train_s1_fwd(
// CHECK: %[[SEED:.*]] = llvm.mlir.constant(1.000000e+00 : f32)
// CHECK: llvm.call @gpipe_rt_cpu_fill_f32(%{{.*}}, %{{.*}}, %[[SEED]])
// CHECK: llvm.call @__gpipe_train_s1_bwd(

// The exported accessors and the metadata.
// CHECK: llvm.func @gpipe_model_metadata() -> !llvm.ptr
// CHECK: llvm.mlir.global internal constant @__gpipe_metadata{{[0-9]+}}("{\22abi_version\22:1,
// CHECK-SAME: \22data_hint\22:\22classification\22
// CHECK-SAME: \22format\22:\22gpipe-model\22
// CHECK-SAME: \22input\22:{\22dtype\22:\22f32\22,\22shape\22:[8,32]}
// CHECK-SAME: \22labels\22:{\22classes\22:10,\22dtype\22:\22i64\22,\22shape\22:[8]}
// CHECK-SAME: \22microbatches\22:2
// CHECK-SAME: {\22data_offset\22:0,\22dtype\22:\22f32\22,\22init\22:\22data\22,\22name\22:\22w0\22,\22shape\22:[32,64]}
// CHECK-SAME: \22source\22:\22lower.mlir\22
// CHECK-SAME: \22stages\22:2
// CHECK: llvm.func @gpipe_model_data() -> !llvm.ptr
// CHECK: llvm.func @gpipe_model_abi_version() -> i32

nn.parameter @w0 : tensor<32x64xf32> = dense<0.01> : tensor<32x64xf32>
nn.parameter @w1 : tensor<64x10xf32> {init = "uniform", init_scale = 0.125 : f64}
func.func @forward(%x: tensor<8x32xf32>) -> tensor<8x10xf32> {
  %w0 = nn.param @w0 : tensor<32x64xf32>
  %h = nn.linear %x, %w0 : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32> loc("fc0")
  %a = nn.relu %h : tensor<8x64xf32> loc("act0")
  %w1 = nn.param @w1 : tensor<64x10xf32>
  %y = nn.linear %a, %w1 : (tensor<8x64xf32>, tensor<64x10xf32>) -> tensor<8x10xf32> loc("fc1")
  return %y : tensor<8x10xf32>
}
