/*===- Program.h - The ABI between compiled models and the runtime -*- C
-*-===*\
|*                                                                            *|
|* A model compiled by gpipe-compile is a shared library holding one native  *|
|* function per pipeline rank: the rank's scheduled program for ONE training *|
|* step, the schedule's micro-batch loops over the stage functions' kernels  *|
|* (CPUKernels.h) on buffers at fixed offsets of the rank's arena and calls  *|
|* back into the runtime for everything that is not compute: action          *|
|* boundaries (timing, traces, abort checks), transfers between ranks, the   *|
|* data, the loss and the optimizer. The runtime owns threads, arenas,       *|
|* parameters' initial values and every policy (timeouts, the optimizer's    *|
|* hyper-parameters); the library owns the numbers the compiler fixed (the   *|
|* schedule, the memory plan, kernel arguments).                             *|
|*                                                                            *|
|* Exported by the model library:                                             *|
|*                                                                            *|
|*   int32_t gpipe_model_abi_version(void);    GPIPE_RT_ABI_VERSION          *|
|*   const char *gpipe_model_metadata(void);   NUL-terminated JSON (below)   *|
|*   const uint8_t *gpipe_model_data(void);    initial parameter bytes       *|
|*   int32_t gpipe_model_rank_<r>(gpipe_rt_rank *rank, uint8_t *arena);      *|
|*                                                                            *|
|* `gpipe_model_rank_<r>` runs rank r's program once: every action in order. *|
|* It returns 0, or nonzero as soon as a callback or kernel failed (the      *|
|* runtime already holds the message). The arena must be at least the        *|
|* metadata's arena_bytes, aligned to its alignment, with the rank's         *|
|* parameters in place; the code reads and writes nothing else.              *|
|*                                                                            *|
|* Metadata (JSON object; sizes in bytes, offsets into the rank's arena):    *|
|*                                                                            *|
|*   format "gpipe-model", abi_version, producer (tool version string)       *|
|*   source, target ("cpu": gpipe_rt_cpu_* kernels on host memory, "cuda":   *|
|*   gpipe_rt_cuda_* on device memory), precision ("fp32", or "bf16": the   *|
|*   GEMMs call the _bf16 kernels), stages K, microbatches M,               *|
|*   schedule, remat, loss, alignment                                        *|
|*   mode           "train" (default when absent) or "inference": a          *|
|*                  forward-only pipeline (no labels, no loss, no backward,  *|
|*                  step, gradients or optimizer state; grads_offset and     *|
|*                  state_offset -1)                                         *|
|*   output         {shape, dtype} or null: the last stage's prediction over *|
|*                  the mini-batch (dim 0 = B), what gpipe_rt_report_output  *|
|*                  reports per micro-batch (training: the loss's logits)    *|
|*   data_parallel  replicas D of the pipeline (optional, default 1): K x D  *|
|*                  workers, replica d taking samples [d B/D, (d+1) B/D) of *|
|*                  each mini-batch in M micro-batches of B/(M D)           *|
|*   optimizer      the optimizer whose state the arenas hold: "sgd" (none), *|
|*                  "momentum" (1x parameters), "adam" (2x)                  *|
|*   input          {shape, dtype, parts (optional)}: the whole mini-batch   *|
|*                  (dim 0 = B); a model with several inputs packs them as   *|
|*                  [B, S], parts [{name, shape, offset}] saying where: the  *|
|*                  part's full shape (dim 0 = B), the input's dtype, its    *|
|*                  elements at [offset, offset + n) of each sample's S, the *|
|*                  parts tiling S in order; the data holds each by name     *|
|*   labels         {shape, dtype, classes} or null                          *|
|*   vocab          rows of the token embedding when input is token ids      *|
|*   data_hint      "text-char", "classification" or "": what built-in data  *|
|*                  fits when the user gives none                            *|
|*   predicted      {bubble, closed_form_bubble, step_seconds,               *|
|*                  schedule_closed_form_bubble, busy_seconds (per rank,    *|
|*                  optional)}: closed_form_bubble is                        *|
|*                  GPipe's (K-1)/(M+K-1) whatever the schedule;             *|
|*                  schedule_closed_form_bubble the schedule's own, null     *|
|*                  where it has none (optional: older models lack it);      *|
|*                  timeline (optional): per rank, start and end of every    *|
|*                  action of the expanded program in microseconds, flat     *|
|*                  [s0, e0, s1, e1, ...]                                    *|
|*   parameters     [{name, shape, dtype "f32", init: "data" with            *|
|*                  data_offset into gpipe_model_data(), or "zeros", "ones", *|
|*                  "normal", "uniform" with scale; or "tied" with tied_to, *|
|*                  the parameter this copy starts as and is summed with}] *|
|*   stage_info     [{index, rank, name, layers: [names]}]                   *|
|*   ranks          [{rank, symbol, arena_bytes, peak_bytes,                 *|
|*                    peak_kept_bytes (optional: the kept activations of     *|
|*                    peak_bytes),                                           *|
|*                    stages: [{stage, params_offset, grads_offset,          *|
|*                              state_offset, param_bytes,                   *|
|*                              params: [{name, offset, elements}]}],        *|
|*                    actions: [action or {"loop": {lower, upper,          *|
|*                              body: [action...]}}]}]                       *|
|*                  action: {kind, stage, mb, peer, direction, tag, bytes,   *|
|*                  dtype}; kind: forward backward backward_input            *|
|*                  backward_weight recompute send recv reduce_grad step     *|
|*                  sum_tied; mb -1 for step, reduce_grad and sum_tied;      *|
|*                  peer/direction/bytes                                     *|
|*                  only on transfers. A loop runs its body for mb = lower   *|
|*                  .. upper-1, each body action's mb added to it (the       *|
|*                  compiler's micro-batch loops: the metadata does not grow *|
|*                  with M). `tag` may be left out: it is then              *|
|*                  gpipe::abi::getTransferTag of the transfer's boundary   *|
|*                  and micro-batch (Vocabulary.h), the same on both ends.   *|
|*                  Action indices count the expanded program.               *|
|*                  `offset` in params is relative to params_offset (and,   *|
|*                  for the gradient, to grads_offset).                      *|
|*   schema_version 2 (loops, derived tags); absent means 1                 *|
|*   sites          [{op, loc, function}]: the kernel call sites, by the     *|
|*                  index gpipe_rt_kernel_error receives                     *|
|*   eval           (optional; gpipe-compile --eval) the metadata of the     *|
|*                  library's evaluation programs: a forward-only pipeline   *|
|*                  on the same ranks, input and micro-batches, parameters   *|
|*                  "init": "shared" at the training offsets, its ranks'    *|
|*                  symbols gpipe_model_eval_rank_<r> (exported beside the  *|
|*                  training ones, same signature), its arena the training *|
|*                  arena (buffers above the persistent slots), its sites   *|
|*                  its own                                                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GPIPE_RUNTIME_PROGRAM_H
#define GPIPE_RUNTIME_PROGRAM_H

#include "gpipe/Runtime/Common.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Bumped whenever the callbacks below, the exported symbols, the kernels'
/// signatures (Kernels.def, which a library calls) or the metadata's meaning
/// change; the runtime refuses a library of another version. 2: matmul
/// takes its operands' transpose flags. 3: send takes its staging copy.
#define GPIPE_RT_ABI_VERSION 3

/// One rank's view of a running pipeline (owned by the runtime).
typedef struct gpipe_rt_rank gpipe_rt_rank;

/// Signature of `gpipe_model_rank_<r>`.
typedef int32_t (*gpipe_model_rank_fn)(gpipe_rt_rank *rank, uint8_t *arena);

/// Action `action` (its index in the rank's program) starts / ends. Begin
/// returns nonzero when the run is being aborted (another rank failed); the
/// program then returns at once.
int32_t gpipe_rt_action_begin(gpipe_rt_rank *rank, int64_t action);
void gpipe_rt_action_end(gpipe_rt_rank *rank, int64_t action);

/// Transfers of action `action` (a send or a receive; the metadata names the
/// peer and the tag): `bytes` at `data`. A send returns once the receiver
/// has the bytes (rendezvous: the schedule is deadlock-free under it) or,
/// with a `staging` copy (`bytes` of the arena the memory plan set aside
/// for its micro-batch; null: none), possibly once they are in it; a
/// receive once they have arrived. Both fail after the run's timeout.
int32_t gpipe_rt_send(gpipe_rt_rank *rank, int64_t action, const void *data,
                      int64_t bytes, void *staging);
int32_t gpipe_rt_recv(gpipe_rt_rank *rank, int64_t action, void *data,
                      int64_t bytes);

/// Copies micro-batch `microbatch` of the current step's input (stage 0) or
/// labels (last stage) into `data` (`bytes` = one micro-batch).
int32_t gpipe_rt_load_input(gpipe_rt_rank *rank, int64_t microbatch, void *data,
                            int64_t bytes);
int32_t gpipe_rt_load_labels(gpipe_rt_rank *rank, int64_t microbatch,
                             void *data, int64_t bytes);

/// The last stage's forward computed micro-batch `microbatch`'s loss.
int32_t gpipe_rt_report_loss(gpipe_rt_rank *rank, int64_t microbatch,
                             const float *loss);

/// The last stage's forward computed micro-batch `microbatch`'s
/// prediction: `bytes` at `data` (one micro-batch of the metadata's
/// `output`, on the model's device). An inference model's forwards report
/// their output this way; a training model's last forward reports the
/// logits its loss reads, just before the loss. The runtime copies them
/// when it keeps outputs (`gpipe-run --predict`, `--save-outputs`). Added
/// without changing the ABI version: older libraries never call it.
int32_t gpipe_rt_report_output(gpipe_rt_rank *rank, int64_t microbatch,
                               const void *data, int64_t bytes);

/// `gpipe.step` of `stage`: apply the run's optimizer to the stage's
/// `count` parameters with their gradients (summed over the micro-batches)
/// and the optimizer state the plan reserved (null when none).
int32_t gpipe_rt_optimizer_step(gpipe_rt_rank *rank, int64_t stage,
                                float *params, const float *grads, float *state,
                                int64_t count);

/// `gpipe.reduce_grad` of action `action`'s stage (data parallelism):
/// starts summing the stage's `count` gradients at `grads` over the
/// replicas, in place, in replica order (0 + 1 + ... + D-1, the same for
/// every element, so the result does not depend on how the gradients are
/// cut into stages). `scratch` is the plan's Reduce buffer ((D-1) x
/// ceil(count/D) floats; null with one replica). The stage's
/// gpipe_rt_optimizer_step waits for the sum. Added without changing the
/// ABI version: libraries without data parallelism never call it.
int32_t gpipe_rt_reduce_grad(gpipe_rt_rank *rank, int64_t action, float *grads,
                             float *scratch, int64_t count);

/// `gpipe.sum_tied` (action `action`): makes the gradient of every tied
/// parameter copy the rank holds the sum of all the copies' gradients, in
/// copy order, exchanging them with the other holders (the metadata's
/// `tied_to` parameters); `scratch` is the plan's Tied buffer (null when no
/// other rank sends this one a copy). Added without changing the ABI
/// version: libraries without tied parameters never call it.
int32_t gpipe_rt_sum_tied(gpipe_rt_rank *rank, int64_t action, float *scratch);

/// CLIP_GRAD at action `action`: the rank's part of the global gradient
/// norm (the metadata names its stages and parameters) and the scaling of
/// its gradients; `norm` is the plan's Norm buffer (16 bytes). Added
/// without changing the ABI version: libraries without clipping never call
/// it.
int32_t gpipe_rt_clip_grad(gpipe_rt_rank *rank, int64_t action, double *norm);

/// The random key of micro-batch `microbatch` of the current step
/// (gpipe::abi::getRngKey of the run's seed, the step and the micro-batch's
/// index in the whole mini-batch): what dropout kernels draw their masks
/// with. Cannot fail. Added without changing the ABI version: libraries
/// without dropout never call it.
uint64_t gpipe_rt_rng_key(gpipe_rt_rank *rank, int64_t microbatch);

/// A per-layer timing mark: the code that follows, up to the next mark or
/// the end of the action, runs layer `mark / 2` of the model (the layers of
/// the metadata's stage_info in stage order), recomputing its forward when
/// `mark` is odd. What `gpipe-run --profile` times layers with; otherwise
/// it returns at once. Cannot fail. Added without changing the ABI version:
/// a library without marks is timed per action only.
void gpipe_rt_layer(gpipe_rt_rank *rank, int64_t mark);

/// Kernel call site `site` returned `status`; the runtime records
/// gpipe_rt_last_error() with the site's op and location. Returns `status`.
int32_t gpipe_rt_kernel_error(gpipe_rt_rank *rank, int64_t site,
                              int32_t status);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* GPIPE_RUNTIME_PROGRAM_H */
