// convert-rt-to-llvm: each gpipe_rt op becomes LLVM calls, globals or
// memory accesses; func, scf, arith, math and vector go through upstream's
// patterns.
// RUN: gpipe-opt %s --convert-rt-to-llvm | FileCheck %s
// The module's gpipe_rt.target picks the kernel library; the attribute is
// consumed.
// RUN: sed 's/gpipe_rt.target = "cpu"/gpipe_rt.target = "cuda"/' %s | gpipe-opt --convert-rt-to-llvm | FileCheck %s --check-prefix=CUDA
// CUDA-NOT: gpipe_rt.target
// CUDA: llvm.call @gpipe_rt_cuda_fill_f32(
// CUDA-NOT: gpipe_rt_cpu_

// CHECK-NOT: gpipe_rt.target
// CHECK-NOT: gpipe_rt.{{[a-z_]+ }}
// CHECK-NOT: func.func
// CHECK-NOT: scf.

module attributes {gpipe_rt.target = "cpu"} {
  // A stage function: addresses from offsets, read-only data, a checked
  // kernel call that reports its site, a layer mark.
  // CHECK-LABEL: llvm.func internal @stage(
  // CHECK-SAME: %[[RANK:[a-z0-9]+]]: !llvm.ptr, %[[MB:[a-z0-9]+]]: i64, %[[SCRATCH:[a-z0-9]+]]: !llvm.ptr)
  func.func @stage(%rank: !llvm.ptr, %mb: i64, %scratch: !llvm.ptr) -> i32
      attributes {llvm.linkage = #llvm.linkage<internal>} {
    // CHECK: %[[OFF:.*]] = llvm.mlir.constant(256 : i64) : i64
    // CHECK-NEXT: %[[P:.*]] = llvm.getelementptr %[[SCRATCH]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %p = gpipe_rt.offset %scratch[256]
    %n = arith.constant 4 : i64
    %one = arith.constant 1.0 : f32
    // CHECK: %[[S:.*]] = llvm.call @gpipe_rt_cpu_fill_f32(%[[P]], %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, f32) -> i32
    // CHECK: %[[BAD:.*]] = llvm.icmp "ne" %[[S]], %{{.*}} : i32
    // CHECK: llvm.cond_br %[[BAD]], ^[[FAIL:bb[0-9]+]](%[[S]], %{{.*}}, %[[RANK]] : i32, i64, !llvm.ptr), ^
    %s = gpipe_rt.kernel "fill_f32"(%p, %n, %one) : (!llvm.ptr, i64, f32) -> i32
    gpipe_rt.check %s site 7 of %rank
    // CHECK: llvm.call @gpipe_rt_layer(%[[RANK]], %{{.*}}) : (!llvm.ptr, i64) -> ()
    gpipe_rt.layer %rank, %n
    // Equal bytes share one global; shapes are int64 arrays.
    // CHECK: %[[C1:.*]] = llvm.mlir.addressof @[[CONST:__gpipe_const[0-9]+]]
    // CHECK: llvm.mlir.addressof @[[CONST]]
    // CHECK: llvm.mlir.addressof @__gpipe_shape
    %c1 = gpipe_rt.bytes "\00\00\80?"
    %c2 = gpipe_rt.bytes "\00\00\80?"
    %shape = gpipe_rt.ints [4]
    // An array of addresses on the stack.
    // CHECK: %[[ARRAY:.*]] = llvm.alloca %{{.*}} x !llvm.array<2 x ptr>
    // CHECK: llvm.store %[[C1]], %{{.*}} : !llvm.ptr, !llvm.ptr
    %parts = gpipe_rt.ptr_array %c1, %c2
    // CHECK: llvm.call @gpipe_rt_cpu_copy(
    %i32 = arith.constant 0 : i32
    %s2 = gpipe_rt.kernel "copy"(%i32, %c1, %p, %n) : (i32, !llvm.ptr, !llvm.ptr, i64) -> i32
    // The second reporting check branches to the same failure block.
    // CHECK: llvm.cond_br %{{.*}}, ^[[FAIL]](
    gpipe_rt.check %s2 site 8 of %rank
    // A callback's failure returns without a report.
    // CHECK: %[[L:.*]] = llvm.call @gpipe_rt_report_loss(%[[RANK]], %[[MB]], %[[P]])
    // CHECK: llvm.cond_br %{{.*}}, ^[[RET:bb[0-9]+]](%[[L]] : i32), ^
    %l = gpipe_rt.report_loss %rank, %mb, %p
    gpipe_rt.check %l
    %zero = arith.constant 0 : i32
    // CHECK: llvm.return
    // CHECK: ^[[FAIL]](%[[STATUS:.*]]: i32, %[[SITE:.*]]: i64, %[[WHO:.*]]: !llvm.ptr):
    // CHECK-NEXT: llvm.call @gpipe_rt_kernel_error(%[[WHO]], %[[SITE]], %[[STATUS]])
    // CHECK-NEXT: llvm.return %[[STATUS]] : i32
    // CHECK: ^[[RET]](%[[STATUS2:.*]]: i32):
    // CHECK-NEXT: llvm.return %[[STATUS2]] : i32
    return %zero : i32
  }

  // A rank program: a micro-batch loop whose actions leave it on failure.
  // CHECK-LABEL: llvm.func @gpipe_model_rank_0(
  // CHECK-SAME: %[[R:[a-z0-9]+]]: !llvm.ptr, %[[ARENA:[a-z0-9]+]]: !llvm.ptr) -> i32
  // CHECK: llvm.br ^[[HEADER:bb[0-9]+]](
  // CHECK: ^[[HEADER]](%[[IV:.*]]: i64):
  // CHECK: llvm.icmp "slt" %[[IV]]
  // CHECK: %[[BEGIN:.*]] = llvm.call @gpipe_rt_action_begin(%[[R]], %[[IV]])
  // CHECK: llvm.cond_br %{{.*}}, ^[[ABORT:bb[0-9]+]](%[[BEGIN]] : i32), ^
  // CHECK: %[[COPY:.*]] = llvm.urem %[[IV]]
  // CHECK: %[[BYTES:.*]] = llvm.mul %[[COPY]]
  // CHECK: %[[BASE:.*]] = llvm.mlir.constant(512 : i64)
  // CHECK: %[[AT:.*]] = llvm.add %[[BASE]], %[[BYTES]]
  // CHECK: %[[SLOT:.*]] = llvm.getelementptr %[[ARENA]][%[[AT]]]
  // CHECK: llvm.call @gpipe_rt_send(%[[R]], %[[IV]], %[[SLOT]], %{{.*}}, %[[SLOT]])
  // CHECK: llvm.call @stage(%[[R]], %[[IV]], %[[SLOT]])
  // CHECK: llvm.call @gpipe_rt_action_end(%[[R]], %[[IV]])
  // CHECK: llvm.br ^[[HEADER]](
  // CHECK: llvm.call @gpipe_rt_optimizer_step(
  // CHECK: ^[[ABORT]](%{{.*}}: i32):
  func.func @gpipe_model_rank_0(%rank: !llvm.ptr, %arena: !llvm.ptr) -> i32 {
    %lb = arith.constant 0 : index
    %ub = arith.constant 4 : index
    %step = arith.constant 1 : index
    %two = arith.constant 2 : i64
    %stride = arith.constant 1024 : i64
    %bytes = arith.constant 1024 : i64
    scf.for %iv = %lb to %ub step %step {
      %mb = arith.index_cast %iv : index to i64
      %b = gpipe_rt.action_begin %rank, %mb
      gpipe_rt.check %b
      %copy = arith.remui %mb, %two : i64
      %at = arith.muli %copy, %stride : i64
      %slot = gpipe_rt.offset %arena[%at + 512]
      %s = gpipe_rt.send %rank, %mb, %slot, %bytes, %slot
      gpipe_rt.check %s
      %f = func.call @stage(%rank, %mb, %slot) : (!llvm.ptr, i64, !llvm.ptr) -> i32
      gpipe_rt.check %f
      gpipe_rt.action_end %rank, %mb
    }
    %none = gpipe_rt.null
    %stage = arith.constant 0 : i64
    %st = gpipe_rt.step %rank, %stage, %arena, %arena, %none, %bytes
    gpipe_rt.check %st
    %zero = arith.constant 0 : i32
    return %zero : i32
  }

  // A fused loop's body: vector loads and stores of elements, arith and
  // math with no fast-math flags.
  // CHECK-LABEL: llvm.func @elements(
  // CHECK: %[[X:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
  // CHECK: llvm.intr.sqrt(%[[X]]) : (vector<8xf32>) -> vector<8xf32>
  // CHECK: llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr -> i8
  // CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr
  func.func @elements(%in: !llvm.ptr, %mask: !llvm.ptr, %out: !llvm.ptr, %i: i64) -> i32 {
    %x = gpipe_rt.load %in[%i] : vector<8xf32>
    %r = math.sqrt %x : vector<8xf32>
    %m = gpipe_rt.load %mask[%i] : i8
    %v = vector.broadcast %m : i8 to vector<8xi8>
    %zero8 = arith.constant dense<0> : vector<8xi8>
    %c = arith.cmpi ne, %v, %zero8 : vector<8xi8>
    %y = arith.select %c, %r, %x : vector<8xi1>, vector<8xf32>
    gpipe_rt.store %y, %out[%i] : vector<8xf32>
    %zero = arith.constant 0 : i32
    return %zero : i32
  }
}
