// Lowering of a two-stage, two-micro-batch MLP pipeline to runtime calls.
// The input is a checked-in, already planned module (what gpipe-pipeline
// makes of a 32-64-10 MLP): the lowering reads the schedule, the loops and
// the memory plan from it and decides nothing else. CHECK is the gpipe_rt
// form convert-gpipe-to-rt writes, LLVM what convert-rt-to-llvm makes of it.
// RUN: gpipe-opt %s --convert-gpipe-to-rt="source=lower.mlir" | FileCheck %s
// RUN: gpipe-opt %s --convert-gpipe-to-rt="source=lower.mlir" | FileCheck %s --check-prefix=META
// RUN: gpipe-opt %s --convert-gpipe-to-rt --convert-rt-to-llvm | FileCheck %s --check-prefix=LLVM
// META: module attributes {gpipe.model = {abi_version = 3 : i64, alignment = 64 : i64, data_hint = "classification", format = "gpipe-model", gemm = {impl = "openblas"}, input = {dtype = "f32", shape = [8, 32]}, labels = {classes = 10 : i64, dtype = "i64", shape = [8]}, loss = "cross-entropy", microbatches = 2 : i64, mode = "train", optimizer = "sgd", output = {dtype = "f32", shape = [8, 10]},
// META-SAME: parameters = [{data_offset = 0 : i64, dtype = "f32", init = "data", name = "w0", shape = [32, 64]}
// The programs, as compact as the IR: loops with the body's micro-batch
// relative to the loop's; the runtime expands them and derives the tags.
// META-SAME: ranks = [{actions = [{loop = {body = [{kind = "forward", mb = 0 : i64, stage = 0 : i64}, {bytes = 1024 : i64, direction = "forward", dtype = "f32", kind = "send", mb = 0 : i64, peer = 1 : i64, stage = 0 : i64}], lower = 0 : i64, upper = 2 : i64}},
// META-SAME: {kind = "step", mb = -1 : i64, stage = 0 : i64}], arena_bytes = 27648 : i64
// META-SAME: schema_version = 2 : i64
// META-SAME: source = "lower.mlir", stage_info =
// META-SAME: stages = 2 : i64, target = "cpu"
// META-SAME: gpipe_rt.target = "cpu"
// Every address comes from the plan: moving rank 0's input slot (and
// growing its arena to hold it) moves the address the program computes.
// RUN: sed -e 's/<size = 27648, peak = 27648/<size = 28672, peak = 27648/' -e 's/<input stage 0 at 25600 /<input stage 0 at 27648 /' %s | gpipe-opt --convert-gpipe-to-rt | FileCheck %s --check-prefix=MOVED
// MOVED: arena_bytes = 28672
// MOVED: func.func @gpipe_model_rank_0(
// MOVED-NOT: + 25600]
// MOVED: gpipe_rt.offset %{{.*}}[%{{.*}} + 27648]
// The CUDA target: the same program against the gpipe_rt_cuda_* library;
// the generated code never touches a buffer itself.
// RUN: gpipe-opt %s --convert-gpipe-to-rt="target=cuda" --convert-rt-to-llvm | FileCheck %s --check-prefix=CUDA
// CUDA: target = "cuda"
// CUDA-NOT: gpipe_rt_cpu_
// CUDA-NOT: llvm.load
// CUDA-NOT: llvm.store {{.*}} : f32
// CUDA: llvm.call @gpipe_rt_cuda_linear_f32(
// CUDA: llvm.call @gpipe_rt_cuda_cross_entropy_grad_at_f32(
// CUDA: llvm.call @gpipe_rt_cuda_accumulate_f32(
// CUDA: llvm.call @gpipe_rt_cuda_fill_f32(
// RUN: not gpipe-opt %s --convert-gpipe-to-rt="target=tpu" 2>&1 | FileCheck %s --check-prefix=BADTARGET
// BADTARGET: unknown target 'tpu' (expected cpu or cuda)
// bf16: every GEMM, forward and backward, calls its _bf16 twin with the
// same arguments; nothing else changes.
// RUN: gpipe-opt %s --convert-gpipe-to-rt="precision=bf16" | FileCheck %s --check-prefix=BF16 --implicit-check-not=linear_f32 --implicit-check-not=gemm_f32 --implicit-check-not=matmul_f32
// BF16: precision = "bf16"
// BF16: gpipe_rt.kernel "linear_bf16"(
// BF16: gpipe_rt.kernel "gemm_bf16"(
// BF16: gpipe_rt.kernel "accumulate_f32"(
// RUN: gpipe-opt %s --convert-gpipe-to-rt="target=cuda precision=bf16" --convert-rt-to-llvm | FileCheck %s --check-prefix=CUDABF16
// CUDABF16: llvm.call @gpipe_rt_cuda_linear_bf16(
// RUN: not gpipe-opt %s --convert-gpipe-to-rt="precision=fp16" 2>&1 | FileCheck %s --check-prefix=BADPRECISION
// BADPRECISION: unknown precision 'fp16' (expected fp32 or bf16)

// Nothing of nn or gpipe is left: functions on addresses.
// CHECK-NOT: {{= (nn|gpipe)\.}}
// CHECK-NOT: {{^ *(nn|gpipe)\.}}

// Stage 0's forward: linear into the scratch region, then ReLU straight into
// the output buffer the send reads (the last of the function's 7 pointer
// arguments). A failing kernel reports its call site and returns its status.
// CHECK: func.func @__gpipe_train_s0_fwd(%[[RANK:.*]]: !llvm.ptr, %[[MB:.*]]: i64, %[[SCRATCH:.*]]: !llvm.ptr, %[[PARAMS:.*]]: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i32, %[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr) -> i32 attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK: gpipe_rt.layer %[[RANK]], %{{.*}}
// CHECK: %[[LINEAR:.*]] = gpipe_rt.kernel "linear_f32"(%[[IN]], {{.*}}, %[[PARAMS]], {{.*}}, %[[SCRATCH]], {{.*}})
// CHECK-NEXT: gpipe_rt.check %[[LINEAR]] site 0 of %[[RANK]]
// CHECK: %[[RELU:.*]] = gpipe_rt.kernel "unary_f32"(%{{.*}}, %[[SCRATCH]], %[[OUT]], %{{.*}})
// CHECK-NEXT: gpipe_rt.check %[[RELU]] site 1 of %[[RANK]]
// CHECK: return

// Stage 0's backward accumulates its parameter gradients in micro-batch
// order: the i32 `first` flag selects copy or add.
// CHECK-LABEL: func.func @__gpipe_train_s0_bwd(
// CHECK-SAME: %[[GRADS:[a-z0-9]+]]: !llvm.ptr, %[[FIRST:[a-z0-9]+]]: i32, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr,
// CHECK: gpipe_rt.kernel "gemm_f32"(
// CHECK: gpipe_rt.kernel "accumulate_f32"(%[[GRADS]], %{{.*}}, %{{.*}}, %[[FIRST]])

// The last stage's forward hands its prediction over before the loss, and
// reports its loss instead of storing it; a failing callback returns at
// once, without a site.
// CHECK-LABEL: func.func @__gpipe_train_s1_fwd(
// CHECK: gpipe_rt.report_output
// CHECK: gpipe_rt.kernel "cross_entropy_f32"(
// CHECK: %[[LOSS:.*]] = gpipe_rt.report_loss
// CHECK-NEXT: gpipe_rt.check %[[LOSS]]{{$}}

// The exported accessors; the metadata travels as the module's gpipe.model
// attribute (its JSON text is written at translation, see META).
// CHECK-LABEL: func.func @gpipe_model_data() -> !llvm.ptr
// CHECK-NEXT: gpipe_rt.bytes
// CHECK-LABEL: func.func @gpipe_model_abi_version() -> i32

// Rank 0's program keeps the schedule's loops: for mb in [0, 2) { F (data
// load, forward), SEND_F }, for mb in [0, 2) { RECV_B, B }, then STEP. Every
// action is bracketed by begin/end with its index in the expanded program
// (2 * trip + position in the loop body). The kept input of micro-batch mb
// is copy mb mod 2 of its slot: arena + 25600 + (mb urem 2) * 512.
// CHECK: func.func @gpipe_model_rank_0(%[[R:.*]]: !llvm.ptr, %[[ARENA:.*]]: !llvm.ptr) -> i32
// CHECK: scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[IV64:.*]] = arith.index_cast %[[IV]] : index to i64
// CHECK: %[[MB:.*]] = arith.addi %[[IV64]], %{{.*}} : i64
// CHECK: %[[TRIP:.*]] = arith.subi %{{.*}}, %{{.*}} : i64
// CHECK: %[[SCALEDTRIP:.*]] = arith.muli %[[TRIP]], %{{.*}} : i64
// CHECK: %[[INDEX:.*]] = arith.addi %{{.*}}, %[[SCALEDTRIP]] : i64
// CHECK: %[[BEGIN:.*]] = gpipe_rt.action_begin %[[R]], %[[INDEX]]
// CHECK-NEXT: gpipe_rt.check %[[BEGIN]]{{$}}
// CHECK: %[[COPY:.*]] = arith.remui %[[MB]], %{{.*}} : i64
// CHECK: %[[SCALED:.*]] = arith.muli %[[COPY]], %{{.*}} : i64
// CHECK: %[[INPUT:.*]] = gpipe_rt.offset %[[ARENA]][%[[SCALED]] + 25600]
// CHECK: gpipe_rt.load_input %[[R]], %[[MB]], %[[INPUT]],
// CHECK: %[[CALL:.*]] = func.call @__gpipe_train_s0_fwd(%[[R]], %[[MB]], {{.*}}, %[[INPUT]],
// CHECK-NEXT: gpipe_rt.check %[[CALL]]{{$}}
// CHECK-NEXT: gpipe_rt.action_end %[[R]], %[[INDEX]]
// CHECK: gpipe_rt.send
// CHECK: scf.for
// CHECK: gpipe_rt.recv
// CHECK: func.call @__gpipe_train_s0_bwd(
// CHECK: gpipe_rt.step %[[R]],
// CHECK: return

// Rank 1 loads the labels and seeds its backward with 1.0.
// CHECK-LABEL: func.func @gpipe_model_rank_1(
// CHECK: gpipe_rt.recv
// CHECK: gpipe_rt.load_labels
// CHECK: func.call @__gpipe_train_s1_fwd(
// CHECK: %[[SEED:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: gpipe_rt.kernel "fill_f32"(%{{.*}}, %{{.*}}, %[[SEED]])
// CHECK: func.call @__gpipe_train_s1_bwd(

// The LLVM dialect: internal stage functions whose failing kernels branch
// to one block that reports the site; loops as blocks.
// LLVM-NOT: func.func
// LLVM-NOT: gpipe_rt.
// LLVM: llvm.func internal @__gpipe_train_s0_fwd(%[[RANK:.*]]: !llvm.ptr,
// LLVM: llvm.call @gpipe_rt_cpu_linear_f32(
// LLVM: ^bb{{[0-9]+}}(%[[STATUS:.*]]: i32, %[[SITE:.*]]: i64, %[[WHO:.*]]: !llvm.ptr):
// LLVM-NEXT: llvm.call @gpipe_rt_kernel_error(%[[WHO]], %[[SITE]], %[[STATUS]])
// LLVM-NEXT: llvm.return %[[STATUS]]
// LLVM: llvm.func @gpipe_model_data() -> !llvm.ptr
// LLVM: llvm.func @gpipe_model_abi_version() -> i32
// LLVM: llvm.func @gpipe_model_rank_0(%[[R:.*]]: !llvm.ptr, %[[ARENA:.*]]: !llvm.ptr) -> i32
// LLVM: llvm.br ^[[HEADER:bb[0-9]+]](
// LLVM: ^[[HEADER]](%[[IV:.*]]: i64):
// LLVM: llvm.icmp "slt" %[[IV]]
// LLVM: llvm.call @gpipe_rt_action_begin(%[[R]], %{{.*}})
// LLVM: %[[COPY:.*]] = llvm.urem %[[IV]], %{{.*}} : i64
// LLVM: %[[SCALED:.*]] = llvm.mul %[[COPY]], %{{.*}}
// LLVM: %[[BASE:.*]] = llvm.mlir.constant(25600 : i64)
// LLVM: %[[OFFSET:.*]] = llvm.add %[[BASE]], %[[SCALED]]
// LLVM: %[[INPUT:.*]] = llvm.getelementptr %[[ARENA]][%[[OFFSET]]]
// LLVM: llvm.call @gpipe_rt_load_input(%[[R]], %[[IV]], %[[INPUT]],
// LLVM: llvm.call @__gpipe_train_s0_fwd(%[[R]], %[[IV]], {{.*}}, %[[INPUT]],
// LLVM: llvm.call @gpipe_rt_action_end(
// LLVM: llvm.call @gpipe_rt_send(
// LLVM: llvm.br ^[[HEADER]](
// LLVM: llvm.call @gpipe_rt_optimizer_step(%[[R]],

module {
  nn.parameter @w0 : tensor<32x64xf32> = dense<0.00999999977> : tensor<32x64xf32>
  nn.parameter @w1 : tensor<64x10xf32> init uniform(1.250000e-01)
  func.func @forward(%arg0: tensor<4x32xf32>, %arg1: tensor<4xi64>) -> tensor<f32> {
    %0 = nn.layer "layer0"(%arg0) : (tensor<4x32xf32>) -> tensor<4x64xf32> {
    ^bb0(%arg2: tensor<4x32xf32>):
      %3 = nn.param @w0 : tensor<32x64xf32>
      %4 = nn.linear %arg2, %3 : (tensor<4x32xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
      %5 = nn.relu %4 : tensor<4x64xf32>
      nn.yield %5 : tensor<4x64xf32>
    }
    %1 = nn.layer "layer1"(%0) : (tensor<4x64xf32>) -> tensor<4x10xf32> {
    ^bb0(%arg2: tensor<4x64xf32>):
      %3 = nn.param @w1 : tensor<64x10xf32>
      %4 = nn.linear %arg2, %3 : (tensor<4x64xf32>, tensor<64x10xf32>) -> tensor<4x10xf32>
      nn.yield %4 : tensor<4x10xf32>
    }
    %2 = nn.cross_entropy %1, %arg1 : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @train_s0_fwd(%arg0: tensor<4x32xf32>) -> tensor<4x64xf32> attributes {gpipe.frame = #gpipe.frame<size = 1024, seeds = []>} {
    %0 = nn.layer "layer0"(%arg0) : (tensor<4x32xf32>) -> tensor<4x64xf32> {
    ^bb0(%arg1: tensor<4x32xf32>):
      %1 = nn.param @w0 : tensor<32x64xf32>
      %2 = nn.linear %arg1, %1 {gpipe.offsets = array<i64: 0>} : (tensor<4x32xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
      %3 = nn.relu %2 {gpipe.offsets = array<i64: -2>} : tensor<4x64xf32>
      nn.yield %3 : tensor<4x64xf32>
    }
    return %0 : tensor<4x64xf32>
  }
  func.func @train_s0_bwd(%arg0: tensor<4x32xf32>, %arg1: tensor<4x64xf32>) -> tensor<32x64xf32> attributes {gpipe.frame = #gpipe.frame<size = 9216, seeds = []>, nn.input_grads = array<i64>, nn.param_grads = [@w0]} {
    %0 = nn.param @w0 : tensor<32x64xf32>
    %1 = gpipe.remat stage -> tensor<4x64xf32> {
      %6 = nn.linear %arg0, %0 {gpipe.offsets = array<i64: 0>} : (tensor<4x32xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
      %7 = nn.relu %6 {gpipe.offsets = array<i64: 1024>} : tensor<4x64xf32>
      gpipe.yield %7 : tensor<4x64xf32>
    }
    %2 = nn.constant dense<0.000000e+00> : tensor<f32>
    %3 = nn.equal %1, %2 {gpipe.offsets = array<i64: 0>} : (tensor<4x64xf32>, tensor<f32>) -> tensor<4x64xi1>
    %4 = nn.where %3, %2, %arg1 {gpipe.offsets = array<i64: 8192>} : (tensor<4x64xi1>, tensor<f32>, tensor<4x64xf32>) -> tensor<4x64xf32>
    %5 = nn.gemm %arg0, %4 {gpipe.offsets = array<i64: 0>, trans_a = true} : (tensor<4x32xf32>, tensor<4x64xf32>) -> tensor<32x64xf32>
    return %5 : tensor<32x64xf32>
  }
  gpipe.stage @train_s0 index 0 : tensor<4x32xf32> -> tensor<4x64xf32> forward @train_s0_fwd backward @train_s0_bwd {backward_time = 3.532800e-06 : f64, forward_time = 1.177600e-06 : f64}
  func.func @train_s1_fwd(%arg0: tensor<4x64xf32>, %arg1: tensor<4xi64>) -> tensor<f32> attributes {gpipe.frame = #gpipe.frame<size = 256, seeds = []>} {
    %0 = nn.layer "layer1"(%arg0) : (tensor<4x64xf32>) -> tensor<4x10xf32> {
    ^bb0(%arg2: tensor<4x64xf32>):
      %2 = nn.param @w1 : tensor<64x10xf32>
      %3 = nn.linear %arg2, %2 {gpipe.offsets = array<i64: 0>} : (tensor<4x64xf32>, tensor<64x10xf32>) -> tensor<4x10xf32>
      nn.yield %3 : tensor<4x10xf32>
    }
    %1 = nn.cross_entropy %0, %arg1 {gpipe.offsets = array<i64: 192>} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func @train_s1_bwd(%arg0: tensor<4x64xf32>, %arg1: tensor<4xi64>, %arg2: tensor<f32>) -> (tensor<4x64xf32>, tensor<64x10xf32>) attributes {gpipe.frame = #gpipe.frame<size = 2816, seeds = [2752]>, nn.input_grads = array<i64: 0>, nn.loss_scale = 5.000000e-01 : f64, nn.param_grads = [@w1]} {
    %0 = nn.param @w1 : tensor<64x10xf32>
    %1 = gpipe.remat stage -> tensor<4x10xf32> {
      %7 = nn.linear %arg0, %0 {gpipe.offsets = array<i64: 0>} : (tensor<4x64xf32>, tensor<64x10xf32>) -> tensor<4x10xf32>
      gpipe.yield %7 : tensor<4x10xf32>
    }
    %2 = nn.constant dense<5.000000e-01> : tensor<f32>
    %3 = nn.mul %arg2, %2 {gpipe.offsets = array<i64: 192>} : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %4 = nn.cross_entropy_grad %1, %arg1, %3 {gpipe.offsets = array<i64: 2560>} : (tensor<4x10xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x10xf32>
    %5 = nn.linear %4, %0 {gpipe.offsets = array<i64: -2>, transpose_weight = true} : (tensor<4x10xf32>, tensor<64x10xf32>) -> tensor<4x64xf32>
    %6 = nn.gemm %arg0, %4 {gpipe.offsets = array<i64: 0>, trans_a = true} : (tensor<4x64xf32>, tensor<4x10xf32>) -> tensor<64x10xf32>
    return %5, %6 : tensor<4x64xf32>, tensor<64x10xf32>
  }
  gpipe.stage @train_s1 index 1 : tensor<4x64xf32> -> tensor<f32> forward @train_s1_fwd backward @train_s1_bwd {backward_time = 1.123200e-06 : f64, forward_time = 3.744000e-07 : f64}
  gpipe.pipeline @train stages [@train_s0, @train_s1] microbatches 2 schedule gpipe remat stage memory_plan <optimizer = sgd, alignment = 64, budget = 0, peak = 27648, arena = 27648, kept = [2, 2]> {
    gpipe.program rank 0 arena <size = 27648, peak = 27648, peak_at = 5, breakdown = <params = 8192, grads = 8192, optimizer = 0, kept = 1024, scratch = 9216, boundary = 1024>, slots = [<params stage 0 at 0 size 8192 x 1 stride 8192>, <grads stage 0 at 8192 size 8192 x 1 stride 8192>, <input stage 0 at 25600 size 512 x 2 stride 512>, <output stage 0 at 26624 size 1024 x 1 stride 1024>, <scratch stage -1 at 16384 size 9216 x 1 stride 9216>, <output_grad stage 0 at 26624 size 1024 x 1 stride 1024>]> {
      gpipe.for %mb = 0 to 2 {
        gpipe.forward @train_s0 mb %mb
        gpipe.send @train_s0 mb %mb forward to 1 : tensor<4x64xf32>
      }
      gpipe.for %mb = 0 to 2 {
        gpipe.recv @train_s0 mb %mb backward from 1 : tensor<4x64xf32>
        gpipe.backward @train_s0 mb %mb
      }
      gpipe.step @train_s0
    }
    gpipe.program rank 1 arena <size = 11136, peak = 11072, peak_at = 4, breakdown = <params = 2560, grads = 2560, optimizer = 0, kept = 2112, scratch = 2816, boundary = 1024>, slots = [<params stage 1 at 0 size 2560 x 1 stride 2560>, <grads stage 1 at 2560 size 2560 x 1 stride 2560>, <input stage 1 at 7936 size 1024 x 2 stride 1024>, <extra stage 1 at 11008 size 32 x 2 stride 64>, <scratch stage -1 at 5120 size 2816 x 1 stride 2816>, <input_grad stage 1 at 9984 size 1024 x 1 stride 1024>]> {
      gpipe.for %mb = 0 to 2 {
        gpipe.recv @train_s1 mb %mb forward from 0 : tensor<4x64xf32>
        gpipe.forward @train_s1 mb %mb
      }
      gpipe.for %mb = 0 to 2 {
        gpipe.backward @train_s1 mb %mb
        gpipe.send @train_s1 mb %mb backward to 0 : tensor<4x64xf32>
      }
      gpipe.step @train_s1
    }
  }
}

