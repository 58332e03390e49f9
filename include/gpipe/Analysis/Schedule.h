//===- Schedule.h - Pipeline schedules --------------------------*- C++ -*-===//
//
// The scheduled form of a pipeline as plain data: for every rank, the ordered
// list of actions it runs (forward, backward or its input/weight halves,
// recompute, point-to-point sends and receives at stage boundaries, gradient
// all-reduce, optimizer step), in the vocabulary of PyTorch's pipelining
// schedule IR so its CSV schedules can be imported and checked. Also the
// generators for GPipe fill-drain and non-interleaved 1F1B, the schedules the
// field uses after them (interleaved 1F1B, the zero-bubble family, DualPipeV)
// behind one entry point, `buildSchedule`, the pass that places sends and
// receives into per-rank compute orders so that the result cannot deadlock
// under blocking rendezvous semantics, and the CSV reader and writer. Plain
// C++17; no MLIR or LLVM.
//
// Conventions. Stage s lives on rank stageToRank[s]; a rank may hold several
// stages (interleaved schedules). Boundary b joins stage b and stage b+1. An
// action's `stage` is always the LOCAL stage: `1SEND_F3` is stage 1 sending
// the activation of micro-batch 3 to stage 2, `2RECV_F3` is stage 2 receiving
// it, `2SEND_B3` is stage 2 sending the gradient of that activation back and
// `1RECV_B3` stage 1 receiving it. Adjacent stages on the same rank hand data
// over in memory and have no send/receive. A backward is either one Backward
// (B) or a BackwardInput (I, which produces the gradient sent upstream) plus a
// BackwardWeight (W), the zero-bubble split.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_SCHEDULE_H
#define GPIPE_ANALYSIS_SCHEDULE_H

#include "gpipe/Runtime/Vocabulary.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::gpipe {

/// What one action of a rank's program does: the vocabulary the IR, the
/// analyses, the code generator and the runtime share
/// (gpipe/Runtime/Vocabulary.h), with its predicates.
using ActionKind = ::gpipe::abi::ActionKind;
using ::gpipe::abi::hasMicrobatch;
using ::gpipe::abi::isComputeKind;
using ::gpipe::abi::isRecvKind;
using ::gpipe::abi::isSendKind;
using ::gpipe::abi::isTransferKind;
using ::gpipe::abi::kNumActionKinds;

/// The CSV spelling of `kind`: F B I W R SEND_F RECV_F SEND_B RECV_B
/// REDUCE_GRAD STEP.
inline const char *getActionKindName(ActionKind kind) {
  return ::gpipe::abi::getActionKindCSVName(kind);
}

/// SendF/RecvF carry activations (forward direction), SendB/RecvB gradients.
inline bool isForwardComm(ActionKind kind) {
  return kind == ActionKind::SendF || kind == ActionKind::RecvF;
}

/// One action of a rank's program.
struct Action {
  ActionKind kind = ActionKind::Forward;
  int stage = 0;
  /// The micro-batch; -1 for ReduceGrad, Step, SumTied and ClipGrad.
  int microbatch = -1;
  /// For sends and receives the rank at the other end, else -1.
  int peer = -1;
  /// For sends and receives the payload size in bytes, else 0.
  int64_t bytes = 0;
  /// For sends and receives the element type of the payload ("f32"), else
  /// empty.
  std::string dtype;

  static Action compute(ActionKind kind, int stage, int microbatch);
  static Action comm(ActionKind kind, int stage, int microbatch, int peer,
                     int64_t bytes, std::string dtype);
  static Action step(int stage);
  static Action reduceGrad(int stage);

  bool operator==(const Action &other) const;
  bool operator!=(const Action &other) const { return !(*this == other); }
};

/// The CSV cell of `action`: "1SEND_F3", "0F0", "2STEP".
std::string toString(const Action &action);

/// `toString` plus the peer of a send or receive: "1SEND_F3 to rank 2",
/// "2RECV_F3 from rank 1"; what diagnostics print.
std::string describe(const Action &action);

/// A complete pipeline schedule: which rank runs each stage and each rank's
/// program in order.
struct Schedule {
  int numStages = 0;
  int numMicrobatches = 0;
  /// numStages entries.
  std::vector<int> stageToRank;
  /// One program per rank; ranks.size() is the number of ranks.
  std::vector<std::vector<Action>> ranks;
  /// An inference schedule: every (stage, micro-batch) runs one forward and
  /// nothing else (no backward, recompute, gradient reduction or step), and
  /// only activations cross the boundaries.
  bool forwardOnly = false;

  int getNumRanks() const { return static_cast<int>(ranks.size()); }
  /// The rank of `stage`, or -1 when out of range.
  int getRankOfStage(int stage) const;
  /// The stages `rank` runs, ascending.
  std::vector<int> getStagesOfRank(int rank) const;

  bool operator==(const Schedule &other) const;
  bool operator!=(const Schedule &other) const { return !(*this == other); }
};

/// A schedule, or an error message (non-empty) and an empty schedule.
struct ScheduleOrError {
  Schedule schedule;
  std::string error;
  bool ok() const { return error.empty(); }
};

/// What crosses each stage boundary per micro-batch: the activation forward
/// and its gradient (same size and element type) backward.
struct BoundaryTraffic {
  /// numStages - 1 entries: payload bytes of boundary b (stage b -> b+1).
  /// Missing entries count as 0.
  std::vector<int64_t> bytes;
  std::string dtype = "f32";

  static BoundaryTraffic uniform(int numStages, int64_t bytes,
                                 std::string dtype = "f32");
  int64_t getBytes(int boundary) const;
};

/// How the generators and `insertCommunication` work. `insertCommunication`
/// uses the durations only to choose WHERE each send and receive goes in the
/// programs (so that a rendezvous rarely stalls a rank that has work); any
/// positive values give a deadlock-free schedule. The zero-bubble generators
/// (zb-h1, zb-h2, zb-auto) also order the compute actions by them. Integer
/// ticks, so that ties are exact.
struct ScheduleOptions {
  /// Insert a Recompute right before every Backward/BackwardInput (the
  /// "stage" rematerialization policy: keep only the stage's boundary input).
  bool recompute = false;
  int64_t forwardTicks = 1;
  int64_t backwardTicks = 2;
  int64_t recomputeTicks = 1;
  /// The two halves of a split backward: BackwardInput (I) and BackwardWeight
  /// (W). 0 means half of `backwardTicks` (at least 1), what both were before
  /// they could be set.
  int64_t inputTicks = 0;
  int64_t weightTicks = 0;
  /// Per-stage durations of F, I and W (numStages entries each, or empty:
  /// the uniform values above for every stage). zb-auto builds its orders
  /// from them; `insertCommunication` places transfers with them.
  std::vector<int64_t> stageForwardTicks;
  std::vector<int64_t> stageInputTicks;
  std::vector<int64_t> stageWeightTicks;
  /// Where `insertCommunication` puts a transfer in the global event order:
  /// false, at the tick its producer ends; true, at the first tick from
  /// then until its consumer starts at which neither end is inside an
  /// action (else at the producer's end), so that under rendezvous neither
  /// waits for the other when the durations hold. `buildSchedule` sets it
  /// for every family but gpipe and 1f1b.
  bool alignTransfers = false;
  /// zb-auto's memory limit: per stage, the most micro-batches whose
  /// activations the stage may hold at once (from the end of F until its W
  /// or B). Empty, a missing entry or one below 1 means 1F1B's peak on the
  /// rank that holds the most: K with one stage per rank, numStages - s
  /// with the V-shape (`getMaxActivations` gives numStages - s, 1F1B's
  /// per-stage warm-up depth, for callers that want that tighter bound).
  std::vector<int> maxActivations;

  /// The durations used for `stage` (the per-stage entry, else the uniform
  /// value; I and W resolve a 0 to half of the backward).
  int64_t getForwardTicks(int stage) const;
  int64_t getInputTicks(int stage) const;
  int64_t getWeightTicks(int stage) const;
  /// The full backward of `stage`: `backwardTicks` when no per-stage I/W
  /// durations are given, else their sum.
  int64_t getBackwardTicks(int stage) const;
  /// zb-auto's limit for `stage` of `numStages`, as described above.
  int getMaxActivations(int stage, int numStages) const;
};

/// GPipe fill-drain: stage k on rank k runs all M forwards, then all M
/// backwards (micro-batch 0 first, so gradients accumulate in the same order
/// as in every other schedule), then its Step. Sends and receives as placed
/// by `insertCommunication`. K < 1 or M < 1 gives a schedule with no ranks,
/// which `verifySchedule` rejects.
Schedule buildGPipeSchedule(int numStages, int numMicrobatches,
                            const BoundaryTraffic &traffic,
                            const ScheduleOptions &options = {});
Schedule buildGPipeSchedule(int numStages, int numMicrobatches,
                            int64_t boundaryBytes);

/// GPipe's forward half, for inference: stage k on rank k runs the M
/// forwards in micro-batch order, with the sends and receives
/// `insertCommunication` places; `forwardOnly` is set. K < 1 or M < 1 gives
/// a schedule with no ranks, which `verifySchedule` rejects.
Schedule buildForwardSchedule(int numStages, int numMicrobatches,
                              const BoundaryTraffic &traffic,
                              const ScheduleOptions &options = {});

/// The forward half on any placement (`stageToRank`, a rank holding
/// several stages: an interleaved or V-shaped training pipeline's
/// evaluation): every rank runs its forwards micro-batch by micro-batch,
/// each micro-batch through its stages in ascending order. Free of
/// deadlock under rendezvous transfers: the least unfinished (micro-batch,
/// stage) can always run, its sender having nothing before it and its
/// receiver nothing but it. `forwardOnly` is set; an empty or invalid
/// placement gives a schedule with no ranks.
Schedule buildForwardSchedule(const std::vector<int> &stageToRank,
                              int numMicrobatches,
                              const BoundaryTraffic &traffic,
                              const ScheduleOptions &options = {});

/// Non-interleaved 1F1B (PipeDream-flush): stage k runs min(K-k-1, M) warm-up
/// forwards, then alternates one forward and one backward, then drains the
/// remaining backwards, then its Step. Exactly the compute actions of
/// `buildGPipeSchedule`, in another order.
Schedule build1F1BSchedule(int numStages, int numMicrobatches,
                           const BoundaryTraffic &traffic,
                           const ScheduleOptions &options = {});
Schedule build1F1BSchedule(int numStages, int numMicrobatches,
                           int64_t boundaryBytes);

/// Completes a schedule given as per-rank compute orders (F, B, I, W, R,
/// REDUCE_GRAD, STEP; any sends and receives in it are dropped) with the
/// sends and receives every cross-rank boundary needs.
///
/// Placement rule: simulate the compute orders once with `options`' tick
/// durations and unbounded buffering (each action starts when its rank is
/// free and its inputs exist), giving every action a start tick; put each
/// transfer at the tick its producer ends (or, with `alignTransfers`, at the
/// first tick until its consumer starts at which both ends are between
/// actions); sort ALL events (compute actions
/// at their start, transfers at their tick, a transfer before a compute
/// action at the same tick, then by a fixed tie-break) into ONE global
/// sequence and give each rank the subsequence it takes part in. A send and
/// its receive are one event of that sequence, so running the sequence in
/// order is an execution in which every rendezvous finds both ranks at the
/// matching action: the schedule cannot deadlock. Receives precede their
/// consumer and sends follow their producer because every duration is >= 1.
///
/// Errors (a malformed stage map, an action on the wrong rank, a compute order
/// that cannot run, e.g. a backward before its forward on the same rank, or a
/// missing producer) come back as the message.
ScheduleOrError insertCommunication(const Schedule &computeOrder,
                                    const BoundaryTraffic &traffic,
                                    const ScheduleOptions &options = {});

/// Data parallelism: adds one REDUCE_GRAD per stage to a complete schedule,
/// right after the stage's last backward piece (B or W) on its rank, so the
/// replicas' all-reduce of its gradients starts as early as it can and the
/// stage's STEP (which waits for it) stays last. Existing REDUCE_GRADs are
/// dropped first, so the result is the same whatever the input had.
Schedule insertGradientReductions(const Schedule &schedule);

/// Tied parameters: adds one SUM_TIED to each rank that runs a stage `s`
/// with `holdsTied[s]` (named by the lowest such stage), right before the
/// rank's first STEP (at the end without one): after everything the sums
/// need (every backward, every REDUCE_GRAD) and before the updates that
/// read them. Existing SUM_TIEDs are dropped first.
Schedule insertTiedSums(const Schedule &schedule,
                        const std::vector<bool> &holdsTied);

/// Gradient clipping: adds one CLIP_GRAD to every rank, named by its lowest
/// stage, right before its first STEP (after its SUM_TIED): the ranks hand
/// a running sum of squares along the stages in order, the last stage's
/// holder hands the total to every other rank, and each scales its
/// gradients before its steps. Existing CLIP_GRADs are dropped first.
Schedule insertGradientClipping(const Schedule &schedule);

//===----------------------------------------------------------------------===//
// Generated schedule families
//===----------------------------------------------------------------------===//

/// Megatron's interleaved placement (Narayanan et al. 2021): with K ranks and
/// V virtual stages per rank (K*V stages), stage s runs on rank s mod K.
/// Empty for K < 1 or V < 1.
std::vector<int> getInterleavedPlacement(int numRanks, int virtualStages);

/// The V-shape placement of ZB-V and DualPipeV: 2K stages, rank r holds
/// stages r and 2K-1-r, so the first and the last stage share rank 0. Empty
/// for K < 1.
std::vector<int> getVShapePlacement(int numRanks);

/// The schedules `buildSchedule` generates, listed (with their names) in
/// ScheduleFamilies.def: GPipe, OneFOneB, Interleaved1F1B, ZBH1, ZBH2, ZBV,
/// DualPipeV, ZBAuto.
enum class ScheduleFamily {
#define GPIPE_SCHEDULE_FAMILY(kind, name, help) kind,
#include "gpipe/Analysis/ScheduleFamilies.def"
};

/// Every family, in the order above.
std::vector<ScheduleFamily> getScheduleFamilies();

/// "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zbv",
/// "dualpipev", "zb-auto".
const char *getScheduleFamilyName(ScheduleFamily family);

/// The family named `name` (exactly one of the names above); false if none.
bool parseScheduleFamily(std::string_view name, ScheduleFamily &family);

/// The stage map `family` uses for K ranks and V virtual stages per rank:
/// rank k for stage k when V = 1, the V-shape for zbv, dualpipev, v-half,
/// v-min and zb-auto with V = 2, round-robin otherwise. Empty for K < 1 or
/// V < 1.
std::vector<int> getSchedulePlacement(ScheduleFamily family, int numRanks,
                                      int virtualStages);

/// Whether `buildSchedule` generates `family` for K ranks, V virtual stages
/// per rank and M micro-batches: "" if so, else a message naming the value
/// and what the family accepts. All families need K >= 1 and M >= 1;
/// gpipe, 1f1b, zb-h1 and zb-h2 need V = 1; interleaved-1f1b V >= 2 (any M);
/// zbv V = 2 (any M); dualpipev V = 2 and M >= 2K-1; v-half and v-min
/// V = 2 and M >= K; zb-auto V = 1 or 2 (any M).
std::string checkScheduleShape(ScheduleFamily family, int numRanks,
                               int virtualStages, int numMicrobatches);

/// Generates `family` for K ranks, V virtual stages per rank (K*V stages,
/// placed by `getSchedulePlacement`) and M micro-batches: per-rank compute
/// orders completed by `insertCommunication`. On every stage the forwards,
/// and the gradient-accumulating actions (B, or W of a split backward), run
/// in increasing micro-batch order; every (stage, micro-batch) has one F and
/// one B or one I + W; each rank's program ends with the Steps of its stages
/// in increasing stage order. A Recompute precedes every B or I when
/// `options.recompute`. gpipe and 1f1b give exactly `buildGPipeSchedule` and
/// `build1F1BSchedule`; the other families place their transfers with
/// `alignTransfers`. Interleaved 1F1B uses B; ZB-H1, ZB-H2, ZB-V and zb-auto
/// use I + W; DualPipeV both, where PyTorch's does. ZB-H1/H2 order with the
/// uniform durations of `options`, zb-auto with its per-stage durations and
/// `maxActivations`. ZB-H1 limits every rank to 1F1B's peak over all ranks
/// (K micro-batches held from F until W, 1F1B's rank 0): rank r runs 1F1B's
/// K - r warm-up forwards and then defers up to r Ws into 1F1B's cool-down
/// (Qi et al.,
/// "Zero Bubble Pipeline Parallelism", ICLR 2024, section 2.1); ZB-H2 lets
/// rank r hold 2K-1-r (section 2.2). `getClosedFormIdleTime` gives the idle
/// time they reach. Errors: `checkScheduleShape`'s message, or a problem
/// with the durations in `options`.
ScheduleOrError buildSchedule(ScheduleFamily family, int numRanks,
                              int virtualStages, int numMicrobatches,
                              const BoundaryTraffic &traffic,
                              const ScheduleOptions &options = {});

/// The stages per rank `family` runs when none are asked for: 2 for
/// interleaved-1f1b, zbv and dualpipev, 1 for the others.
int getDefaultVirtualStages(ScheduleFamily family);

/// Whether `family` runs split backwards (I + W), so that its stages need
/// the two halves: zb-h1, zb-h2, zbv, dualpipev and zb-auto.
bool usesSplitBackward(ScheduleFamily family);

/// The idle time of every rank in one iteration of `family` (K ranks, V
/// virtual stages per rank, M micro-batches) in closed form, where the
/// literature gives one, for uniform per-stage durations F, I and W (B = I +
/// W; for V > 1 the durations of one stage, i.e. one model chunk): the
/// makespan minus a rank's work V M (F + I + W), the iteration ending when the
/// last rank ends (its Steps take no time) and transfers free. The bubble
/// fraction is idle / (idle + V M (F + I + W)). std::nullopt for a family or
/// a shape or durations without one (or a shape `checkScheduleShape`
/// rejects; durations must be > 0):
///  - gpipe, 1f1b: (K-1)(F+I+W), any M (Huang et al., "GPipe", 2019;
///    Narayanan et al., "PipeDream", 2019): the fraction (K-1)/(M+K-1).
///  - interleaved-1f1b, M a multiple of K: (K-1)(F+I+W) of one chunk, which
///    is (K-1)(F'+B')/V for the whole model part of a rank (F' = V F, B' =
///    V B): 1/V of 1F1B's for the same work (Narayanan et al., "Efficient
///    Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
///    SC 2021, section 2.2). Reached with buffered transfers; a blocking
///    rendezvous may add waits.
///  - zb-h1, M >= K, W <= min(F, I) and F <= 2I (where the generator
///    reaches it): (K-1)(F+I-W) (Qi et al., "Zero
///    Bubble Pipeline Parallelism", ICLR 2024, section 2.1; I is their B):
///    1F1B's memory, the bubble a third of 1F1B's when F = I = W.
///  - zb-h2, M >= K and F = I = W: (K-1)F. Qi et al. call ZB-H2 zero bubble:
///    no rank idles between its first and its last action (the
///    parallelogram of their section 2.2) once the synchronization before the
///    optimizer step is removed (their section 4). Counted per iteration,
///    rank r still waits rF for its first input and (K-1-r)F after its last
///    action for rank K-1, which cannot start before (K-1)F: the bound of any
///    one-stage-per-rank schedule.
///  - zbv, M >= 2K-1 and F = I = W: (K-1)F of one chunk, the same start-up
///    and nothing else (Qi et al., section 6), with 1F1B's peak memory.
/// dualpipev and zb-auto have none.
std::optional<double> getClosedFormIdleTime(ScheduleFamily family, int numRanks,
                                            int virtualStages,
                                            int numMicrobatches, double forward,
                                            double input, double weight);

/// PyTorch pipelining CSV: one line per rank, cells `<stage><TYPE>[<mb>]`
/// (TYPE one of F B I W SEND_F RECV_F SEND_B RECV_B REDUCE_GRAD, plus gpipe's
/// R and STEP) separated by commas, ending in a newline. Peers, bytes and
/// dtypes are not written; `parseCSV` derives them.
std::string toCSV(const Schedule &schedule);

/// Reads `toCSV`'s format (and PyTorch's `_dump_csv` output): ranks are
/// lines, empty cells are idle slots and are skipped, spaces and a trailing
/// CR are ignored. The stage map is inferred (each stage must appear on
/// exactly one rank); peers come from it, bytes and dtype from `traffic`.
/// Errors name the line (rank), the 1-based column and the cell text. The
/// result is not verified: call `verifySchedule`, or `insertCommunication`
/// for a compute-only CSV.
///
/// PyTorch spellings beyond gpipe's own: a composite cell
/// `(<action>;<action>...)OVERLAP_F_B` (compute actions the library may
/// overlap, e.g. DualPipeV's forward of one stage with a backward of another)
/// becomes its sub-actions in order; UNSHARD, RESHARD (FSDP parameter
/// gather/free), WAIT_SEND_F, WAIT_SEND_B and WAIT_REDUCE_GRAD (completion of
/// an asynchronous send or reduction) have no effect in gpipe's model, where
/// stage parameters are not sharded and sends and reductions complete when
/// they return: they are checked like other cells and dropped.
ScheduleOrError parseCSV(std::string_view text, int numStages,
                         int numMicrobatches,
                         const BoundaryTraffic &traffic = {});

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_SCHEDULE_H
