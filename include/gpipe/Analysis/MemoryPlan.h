//===- MemoryPlan.h - Per-rank arena memory planning ------------*- C++ -*-===//
//
// The memory planner: given a verified schedule (every rank's ordered
// program) and the sizes of each stage (parameters, optimizer state, boundary
// activations, per-micro-batch kept bytes, forward and backward working
// sets), it lists every buffer each rank needs with the actions it is live
// for, places all of them into ONE arena per rank at static offsets, and
// reports the arena size and the exact peak of live bytes with a breakdown.
// Plain C++17.
//
// Time. Action i of a rank's program is one point in time. A buffer is live
// at every action from the one that creates it to the one that last uses it,
// both included; two buffers whose action intervals intersect must not
// overlap in the arena. Peak = the largest sum of live bytes at any action.
//
// Buffers of a rank (stage s, micro-batch m; "next"/"previous" stage):
//
//   Parameters(s), Gradients(s), OptimizerState(s)   whole program
//   Input(s, m)      the stage's input activation, kept for its backward:
//                    from RECV_F (cross-rank), F of s on stage 0 (the data
//                    micro-batch), or F of s-1 when s-1 runs on the same rank
//                    (its output is handed over in memory), to B of s (W for
//                    a split backward). Until F of s runs it is a receive
//                    buffer (a schedule may receive micro-batch m+1 before
//                    the backward that frees micro-batch m-K+k+1); from F on
//                    a kept activation. Same buffer, counted by phase.
//   ExtraInput(s, m) the forward's other arguments (the labels of the last
//                    stage): F to B/W.
//   Saved(s, m)      remat `none` only: the forward intermediates the
//                    backward reads instead of recomputing them: F to B/W.
//   Deferred(s, m)   a split backward only: what its input half (I) hands
//                    to its weight half (W), the intermediate gradients and
//                    activations the weight gradients read: I to W.
//   Output(s, m)     the forward's output while it waits for SEND_F: F to
//                    SEND_F. None on the last stage (the loss is part of the
//                    forward's working set) nor when s+1 is on the same rank
//                    (then the output IS Input(s+1, m)).
//   OutputGrad(s, m) the gradient of the stage's output: from RECV_B, or from
//                    B/I of s+1 on the same rank (hand-over), to B/W of s.
//                    None on the last stage (the loss seed is part of the
//                    backward's working set).
//   InputGrad(s, m)  the gradient of the stage's input while it waits for
//                    SEND_B: B/I to SEND_B. None on stage 0 and when s-1 is
//                    on the same rank (then it IS OutputGrad(s-1, m)).
//   Scratch          one per compute action (F, B, I, W, R), live only at that
//                    action: the working set of the stage function for one
//                    micro-batch (see StageMemory).
//   Reduce(s)        data parallelism (`replicas` D > 1) only: the pieces of
//                    the other replicas' gradients the rank sums its share
//                    of, (D-1) x ceil(n/D) floats for n gradient floats:
//                    REDUCE_GRAD to STEP. Counted with the boundary buffers
//                    (communication).
//   Tied(s)          tied parameters only: where the holder of a tied
//                    parameter's first copy receives another rank's copy's
//                    gradient (`tiedBytes`), live at SUM_TIED only. Counted
//                    with the boundary buffers.
//   StagedOutput(s, c), StagedInputGrad(s, c)
//                    buffered sends only (`sendBuffering`): copy c of the
//                    staging slot a SEND_F (SEND_B) of stage s puts its
//                    payload in, so that the rank goes on before the peer
//                    receives it (Rendezvous.h). When the peer takes it is
//                    not this rank's program's to know, so each copy is
//                    live from the first send into it to the program's
//                    end. Counted with the boundary buffers.
//   Norm(s)          gradient clipping only: the running sum of squares a
//                    CLIP_GRAD named by stage s receives and hands on, and
//                    the total (kGradNormBytes), live at CLIP_GRAD only.
//                    Counted with the boundary buffers.
//
// A forward-only (inference) schedule has Parameters as its only persistent
// buffers, and each Input lives from its arrival to its forward only: a
// receive buffer, never kept (no ExtraInput, Saved, Deferred or gradients).
//
// Kept activations = Input (from its forward on) + ExtraInput + Saved +
// Deferred;
// boundary (send/receive) buffers = Input (before its forward) + Output +
// OutputGrad + InputGrad + Reduce + Tied + Norm + StagedOutput +
// StagedInputGrad.
//
// Slots. The buffers of one (kind, stage) are the same size and live in
// micro-batch order, so they share a slot of c copies, micro-batch m in copy
// m mod c, with c the fewest copies for which no two buffers of one copy are
// live at once (the most that are live at once, for first-in-first-out
// lifetimes). Every scratch buffer of a rank shares one slot of one copy.
// A plan is then O(stages) numbers per rank whatever M is: the IR and the
// generated code index a slot with the micro-batch.
//
// Allocation. Offline interval allocation of the slots (the interval graph
// of a rank is fully known at compile time): persistent slots first, packed
// from offset 0; then every other slot greedily, largest first, into the
// best-fitting (smallest sufficient) gap among the buffers already placed that
// are live at the same time, or on top of them. A second order (by first
// action, first fit) is tried too and the smaller arena kept; ties keep the
// first. Then the same two orders with every buffer but the scratch region
// placed on its own (its slot then records a table of one offset per
// micro-batch, "buffers"): a slot's copies reserve their bytes while any
// micro-batch in them is live, which schedules whose lifetimes are not
// first-in first-out (the V-shape, several stages per rank) pay for with a
// fifth to a third more arena than their peak. The smaller arena wins; ties
// keep the slots. Offsets and sizes are multiples of `alignment`.
// Deterministic. The arena is never smaller than the peak of aligned live
// bytes; `getArenaOverhead` says by how much it exceeds the exact peak.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_MEMORYPLAN_H
#define GPIPE_ANALYSIS_MEMORYPLAN_H

#include "gpipe/Analysis/Rendezvous.h"
#include "gpipe/Analysis/Schedule.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::gpipe {

/// What one stage needs, in bytes. Per-micro-batch sizes are for one
/// micro-batch.
struct StageMemory {
  /// Parameters the stage owns; the gradient accumulator has the same size
  /// and the optimizer state `optimizerStateFactor` times it.
  int64_t paramBytes = 0;
  /// The boundary activation entering the stage (the data on stage 0).
  int64_t inputBytes = 0;
  /// The forward's other arguments, kept from F to B (the labels).
  int64_t extraInputBytes = 0;
  /// The boundary activation leaving the stage (the gradient coming back has
  /// the same size).
  int64_t outputBytes = 0;
  /// Remat `none`: the forward intermediates kept from F to B on top of the
  /// input. Ignored (treated as 0) with remat `stage`.
  int64_t savedBytes = 0;
  /// Peak live bytes inside the forward of one micro-batch, arguments and the
  /// output buffer excluded.
  int64_t forwardScratch = 0;
  /// Peak live bytes inside the backward of one micro-batch (with remat
  /// `stage`: the recomputed activations and the gradients), arguments and
  /// the input-gradient buffer excluded.
  int64_t backwardScratch = 0;
  /// The same for the two halves of a split backward; nullopt: use
  /// backwardScratch.
  std::optional<int64_t> backwardInputScratch;
  std::optional<int64_t> backwardWeightScratch;
  /// A split backward: the bytes its input half hands to its weight half
  /// for one micro-batch, kept from I to W.
  int64_t deferredBytes = 0;
  /// Tied parameters: the receive buffer of a SUM_TIED named by this stage,
  /// the largest tied copy another rank sends this rank (0: none).
  int64_t tiedBytes = 0;
};

/// What a stage keeps between its forward and its backward.
enum class RematPolicy {
  Stage, ///< only its input (and extra inputs); the backward recomputes
  None,  ///< its input plus `savedBytes` of forward intermediates
};

/// The optimizer whose state the plan reserves, from the vocabulary the
/// runtime shares (gpipe/Runtime/Vocabulary.h): state per parameter byte SGD
/// 0, SGD with momentum 1 (velocity), Adam/AdamW 2 (first and second moments);
/// named "sgd", "momentum", "adam" (also "sgd-momentum", "adamw";
/// gpipe/Runtime/Optimizers.def).
using OptimizerKind = ::gpipe::abi::OptimizerKind;
using ::gpipe::abi::getOptimizerName;
using ::gpipe::abi::getOptimizerStateFactor;
using ::gpipe::abi::parseOptimizerKind;

/// Bytes of the Reduce buffer of a stage with `paramBytes` of parameters
/// (f32) among `replicas` replicas: the other replicas' pieces of the share
/// this replica sums, (D-1) x ceil(n/D) floats; 0 for one replica.
int64_t getReduceBufferBytes(int64_t paramBytes, int64_t replicas);

struct MemoryPlanInput {
  /// One entry per stage of the schedule.
  std::vector<StageMemory> stages;
  RematPolicy remat = RematPolicy::Stage;
  OptimizerKind optimizer = OptimizerKind::SGD;
  /// Data-parallel replicas D: with more than one, each REDUCE_GRAD holds
  /// a Reduce buffer until its STEP.
  int64_t replicas = 1;
  /// Offsets and sizes in the arena are multiples of this (a power of two
  /// >= 1).
  int64_t alignment = 64;
  /// Per rank (empty: none): the bytes at the start of its arena that
  /// another pipeline sharing the arena keeps between runs of this one (an
  /// evaluation pipeline inside a training library: the training
  /// parameters, gradients and optimizer state). The persistent slots still
  /// pack from offset 0 (the shared parameters); every other slot is placed
  /// at or above the rank's reserve, so the arena is at least that.
  std::vector<int64_t> reservedBytes;
  /// Per stage (empty: none): where its Parameters slot goes in its rank's
  /// arena instead of packing from 0 (the training pipeline's offsets, for
  /// an evaluation pipeline that reads them in place). Given, it names every
  /// stage; the other persistent slots pack above the highest.
  std::vector<int64_t> parameterOffsets;
  /// Buffered sends: the staging copies of each send slot (none: every
  /// transfer a rendezvous, no staging slots).
  SendBuffering sendBuffering;
  /// The caller has run `verifySchedule` on the schedule and it passed:
  /// planMemory does not simulate it again (the simulation is O(K·M)).
  bool verified = false;
};

enum class BufferKind {
  Parameters,
  Gradients,
  OptimizerState,
  Input,
  ExtraInput,
  Saved,
  Deferred,
  Output,
  OutputGrad,
  InputGrad,
  Scratch,
  Reduce,
  Tied,
  Norm,
  StagedOutput,
  StagedInputGrad,
};

/// The Norm buffer: the running sum of squares and the total, as doubles.
inline constexpr int64_t kGradNormBytes = 16;

/// "params", "grads", "optimizer", "input", "extra", "saved", "deferred",
/// "output", "output_grad", "input_grad", "scratch", "reduce", "tied",
/// "norm", "staged_output", "staged_input_grad".
const char *getBufferKindName(BufferKind kind);
/// Parameters, Gradients, OptimizerState.
bool isPersistentBuffer(BufferKind kind);
/// Input, ExtraInput, Saved, Deferred.
bool isKeptActivation(BufferKind kind);
/// Output, OutputGrad, InputGrad, Reduce, Tied, Norm, StagedOutput,
/// StagedInputGrad.
bool isBoundaryBuffer(BufferKind kind);

struct PlannedBuffer {
  BufferKind kind = BufferKind::Scratch;
  int stage = 0;
  /// The micro-batch; -1 for persistent buffers.
  int microbatch = -1;
  /// Exact size.
  int64_t bytes = 0;
  /// Offset in the rank's arena (a multiple of the alignment).
  int64_t offset = 0;
  /// The actions (indices into the rank's program) it is live for, both
  /// included.
  int firstAction = 0;
  int lastAction = 0;
  /// Input buffers: the stage's forward, from which on the buffer is a kept
  /// activation (before it, a receive buffer). Others: firstAction.
  int keptFromAction = 0;

  bool isLiveAt(int action) const {
    return firstAction <= action && action <= lastAction;
  }
  /// Live at `action` as a kept activation (Input from its forward on,
  /// ExtraInput, Saved).
  bool isKeptAt(int action) const {
    return isLiveAt(action) && isKeptActivation(kind) &&
           action >= keptFromAction;
  }
};

/// Where one kind of buffer of one stage lives: `count` copies of `size`
/// bytes, `stride` (the size rounded up to the alignment) apart from
/// `offset`, or, with a `table`, copy c at table[c] (-1: a copy no buffer
/// uses); micro-batch m uses copy m mod count. The rank's scratch region
/// is one slot of stage -1 (the largest working set of its stage
/// functions: one runs at a time). A slot is live from the first action
/// any of its buffers is live at to the last.
struct PlannedSlot {
  BufferKind kind = BufferKind::Scratch;
  int stage = -1;
  int64_t size = 0;
  int64_t stride = 0;
  int count = 1;
  int64_t offset = 0;
  int firstAction = 0;
  int lastAction = 0;
  /// Placed buffer by buffer: the offset of each copy (`count` entries);
  /// `offset` is then the lowest.
  std::vector<int64_t> table;

  /// The bytes from `offset` to the end of its last copy.
  int64_t getSpan() const {
    if (!table.empty()) {
      int64_t end = offset;
      for (int64_t at : table)
        end = std::max(end, at + size);
      return end - offset;
    }
    return count > 1 ? (count - 1) * stride + size : size;
  }
};

/// Bytes by category.
struct MemoryBreakdown {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizerState = 0;
  /// Input (from its forward on) + ExtraInput + Saved + Deferred
  int64_t keptActivations = 0;
  int64_t scratch = 0;
  /// Input (before its forward) + Output + OutputGrad + InputGrad +
  /// Reduce + Tied + Norm + StagedOutput + StagedInputGrad
  int64_t boundary = 0;

  int64_t getTotal() const {
    return parameters + gradients + optimizerState + keptActivations + scratch +
           boundary;
  }
  /// Adds `buffer`, live at `action`, to its category.
  void add(const PlannedBuffer &buffer, int action);
};

struct RankMemoryPlan {
  /// Every buffer of the rank, persistent ones first, then in the order the
  /// program creates them; each at its slot's offset for its micro-batch.
  std::vector<PlannedBuffer> buffers;
  /// The slots the buffers live in, persistent ones first: what the arena
  /// holds and what the IR records. Their number does not depend on M.
  std::vector<PlannedSlot> slots;
  /// The exact peak of live bytes (unaligned) and the first action where it
  /// is reached (-1 for an empty program).
  int64_t peakBytes = 0;
  int peakAction = -1;
  /// The live bytes at `peakAction` by category; sums to peakBytes.
  MemoryBreakdown atPeak;
  /// The peak of live bytes with every buffer rounded up to the alignment:
  /// a lower bound on any arena.
  int64_t alignedPeakBytes = 0;
  /// The arena size: max of offset + aligned size over the buffers.
  int64_t arenaBytes = 0;
  /// Per stage of the schedule (0 for stages of other ranks): the most
  /// micro-batches whose input is kept at one time (forward run, backward
  /// not yet).
  std::vector<int> peakKeptMicrobatches;
  /// Which placement produced the arena: "size" or "time" (slots), or
  /// "buffers" (each buffer on its own; its slots have tables).
  std::string strategy;

  /// The buffers live at `action`.
  std::vector<const PlannedBuffer *> getLiveBuffers(int action) const;
  /// arenaBytes / peakBytes - 1 (0 when the peak is 0).
  double getArenaOverhead() const;
};

struct MemoryPlan {
  /// One plan per rank of the schedule.
  std::vector<RankMemoryPlan> ranks;
  /// Non-empty when the schedule fails verification or the input does not
  /// fit it; the ranks are then empty.
  std::string error;

  bool ok() const { return error.empty(); }
};

/// Plans `schedule` (which must pass `verifySchedule`) with the sizes of
/// `input` (one StageMemory per stage, all sizes >= 0).
MemoryPlan planMemory(const Schedule &schedule, const MemoryPlanInput &input);

/// The interval allocator on its own: places `buffers` (their bytes and
/// action intervals given; offsets are overwritten) so that buffers live at
/// the same action do not overlap. Persistent kinds are packed first from 0.
/// Returns the arena size; `strategy` receives "size" or "time".
int64_t allocateArena(std::vector<PlannedBuffer> &buffers, int64_t alignment,
                      std::string *strategy = nullptr);

/// A value's life inside a function body for `getPeakLiveBytes`: its bytes
/// and the program points (op positions) of its definition and last use.
struct LiveRange {
  int64_t bytes = 0;
  int def = 0;
  int lastUse = 0; ///< >= def
};

/// max over program points p of the bytes of ranges with def <= p <= lastUse;
/// 0 for none. The working-set measure behind forwardScratch and
/// backwardScratch.
int64_t getPeakLiveBytes(const std::vector<LiveRange> &ranges);

/// A multi-line table of `plan` for reports and diagnostics: per rank the
/// arena, the peak and its breakdown.
std::string describeMemoryPlan(const Schedule &schedule,
                               const MemoryPlan &plan);

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_MEMORYPLAN_H
