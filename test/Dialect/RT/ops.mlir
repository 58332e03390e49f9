// RUN: gpipe-opt %s | gpipe-opt | FileCheck %s

// Every gpipe_rt op prints and parses back.

// CHECK-LABEL: func.func @stage(
func.func @stage(%rank: !llvm.ptr, %mb: i64, %scratch: !llvm.ptr,
                 %params: !llvm.ptr, %out: !llvm.ptr) -> i32 {
  // CHECK: %[[W:.*]] = gpipe_rt.offset %{{.*}}[1024]
  %w = gpipe_rt.offset %params[1024]
  %c = arith.constant 2 : i64
  // CHECK: gpipe_rt.offset %{{.*}}[%{{.*}} + 64]
  %copy = gpipe_rt.offset %scratch[%c + 64]
  // CHECK: gpipe_rt.null
  %none = gpipe_rt.null
  // CHECK: gpipe_rt.bytes "\00\00\80?"
  %one = gpipe_rt.bytes "\00\00\80?"
  // CHECK: gpipe_rt.ints [8, 64]
  %shape = gpipe_rt.ints [8, 64]
  // CHECK: gpipe_rt.ptr_array %{{.*}}, %{{.*}}
  %parts = gpipe_rt.ptr_array %w, %copy
  %n = arith.constant 8 : i64
  %x = arith.constant 1.0 : f32
  // CHECK: %[[S:.*]] = gpipe_rt.kernel "fill_f32"(%{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, f32) -> i32
  %s = gpipe_rt.kernel "fill_f32"(%out, %n, %x) : (!llvm.ptr, i64, f32) -> i32
  // CHECK: gpipe_rt.check %[[S]] site 3 of %{{.*}}
  gpipe_rt.check %s site 3 of %rank
  // CHECK: gpipe_rt.layer
  gpipe_rt.layer %rank, %n
  // CHECK: gpipe_rt.rng_key
  %key = gpipe_rt.rng_key %rank, %mb
  // CHECK: gpipe_rt.report_loss
  %l = gpipe_rt.report_loss %rank, %mb, %out
  // CHECK: gpipe_rt.check %{{[0-9a-z_]+}}{{$}}
  gpipe_rt.check %l
  // CHECK: gpipe_rt.report_output
  %o = gpipe_rt.report_output %rank, %mb, %out, %n
  gpipe_rt.check %o
  %i = arith.constant 0 : i64
  // CHECK: gpipe_rt.load %{{.*}}[%{{.*}}] : vector<8xf32>
  %v = gpipe_rt.load %scratch[%i] : vector<8xf32>
  // CHECK: gpipe_rt.load %{{.*}}[%{{.*}}] : i8
  %b = gpipe_rt.load %scratch[%i] : i8
  // CHECK: gpipe_rt.store %{{.*}}, %{{.*}}[%{{.*}}] : vector<8xf32>
  gpipe_rt.store %v, %out[%i] : vector<8xf32>
  %zero = arith.constant 0 : i32
  return %zero : i32
}

// CHECK-LABEL: func.func @program(
func.func @program(%rank: !llvm.ptr, %arena: !llvm.ptr) -> i32 {
  %index = arith.constant 0 : i64
  %bytes = arith.constant 1024 : i64
  // CHECK: gpipe_rt.action_begin
  %b = gpipe_rt.action_begin %rank, %index
  gpipe_rt.check %b
  // CHECK: gpipe_rt.load_input
  %li = gpipe_rt.load_input %rank, %index, %arena, %bytes
  // CHECK: gpipe_rt.load_labels
  %ll = gpipe_rt.load_labels %rank, %index, %arena, %bytes
  %none = gpipe_rt.null
  // CHECK: gpipe_rt.send %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}
  %s = gpipe_rt.send %rank, %index, %arena, %bytes, %none
  // CHECK: gpipe_rt.recv
  %r = gpipe_rt.recv %rank, %index, %arena, %bytes
  // CHECK: gpipe_rt.step
  %st = gpipe_rt.step %rank, %index, %arena, %arena, %none, %bytes
  // CHECK: gpipe_rt.reduce_grad
  %rg = gpipe_rt.reduce_grad %rank, %index, %arena, %none, %bytes
  // CHECK: gpipe_rt.sum_tied
  %t = gpipe_rt.sum_tied %rank, %index, %none
  // CHECK: gpipe_rt.clip_grad
  %c = gpipe_rt.clip_grad %rank, %index, %arena
  // CHECK: gpipe_rt.action_end
  gpipe_rt.action_end %rank, %index
  %zero = arith.constant 0 : i32
  return %zero : i32
}
