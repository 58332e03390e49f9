//===- ScheduleVerifier.cpp - Schedule verification -------------*- C++ -*-===//
//
// Implements `verifySchedule`: the static checks over each rank's program
// (shape, coverage, program-order data dependencies, send/receive pairing),
// then the blocking-rendezvous run of all ranks (Rendezvous.h) which, when it
// gets stuck, walks the waits-for graph (each stuck rank waits for exactly one
// peer) to report every wait cycle and every send or receive whose partner
// rank has finished or does not exist.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/ScheduleVerifier.h"

#include "gpipe/Analysis/Rendezvous.h"

#include <algorithm>
#include <initializer_list>
#include <utility>

using namespace mlir::gpipe;

std::string VerifyResult::getMessage() const {
  std::string text = summary;
  for (const VerifyProblem &problem : problems)
    text += "\n  " + problem.message;
  return text;
}

bool VerifyResult::has(VerifyProblemKind kind) const {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const VerifyProblem &p) { return p.kind == kind; });
}

namespace {

const char *getKindName(VerifyProblemKind kind) {
  switch (kind) {
  case VerifyProblemKind::Malformed:
    return "malformed";
  case VerifyProblemKind::Coverage:
    return "coverage";
  case VerifyProblemKind::Order:
    return "order";
  case VerifyProblemKind::Unmatched:
    return "unmatched";
  case VerifyProblemKind::Mismatch:
    return "mismatch";
  case VerifyProblemKind::Deadlock:
    return "deadlock";
  }
  return "?";
}

/// A position in a rank's program.
struct Pos {
  int rank = -1;
  int index = -1;
};

class Verifier {
public:
  explicit Verifier(const Schedule &input) : schedule(input) {}

  VerifyResult run();

private:
  void report(VerifyProblemKind kind, std::string message);
  /// "rank 1 action 5 (1SEND_F3 to rank 2)".
  std::string at(Pos pos) const;
  std::string at(int rank, int index) const { return at(Pos{rank, index}); }
  const Action &get(Pos pos) const {
    return schedule.ranks[pos.rank][pos.index];
  }
  /// The stage a send or receive talks to: the next one for SendF/RecvB,
  /// the previous one for RecvF/SendB (possibly out of range).
  static int getNeighbourStage(const Action &action) {
    bool towardsNext =
        action.kind == ActionKind::SendF || action.kind == ActionKind::RecvB;
    return towardsNext ? action.stage + 1 : action.stage - 1;
  }

  bool checkTopLevel();
  void checkActions();
  void indexActions();
  void checkCoverage();
  void checkOrder();
  void checkPairing();
  void simulate();

  std::vector<Pos> &slot(std::vector<std::vector<Pos>> &table, int stage,
                         int mb) {
    return table[static_cast<size_t>(stage) * numMicrobatches + mb];
  }
  /// The unique entry of `list`, or an invalid position.
  static Pos unique(const std::vector<Pos> &list) {
    return list.size() == 1 ? list.front() : Pos{};
  }

  const Schedule &schedule;
  int numStages = 0, numMicrobatches = 0, numRanks = 0;
  VerifyResult result;
  int countByKind[6] = {0, 0, 0, 0, 0, 0};
  /// Per rank and action: usable for the indexed checks.
  std::vector<std::vector<bool>> valid;
  /// Per (stage, micro-batch): where each kind of action is.
  std::vector<std::vector<Pos>> forwards, backwards, inputs, weights, remats;
  std::vector<std::vector<Pos>> sendF, recvF, sendB, recvB;
  /// Per stage.
  std::vector<std::vector<Pos>> steps, reduceGrads;
};

void Verifier::report(VerifyProblemKind kind, std::string message) {
  ++result.numProblems;
  ++countByKind[static_cast<int>(kind)];
  if (static_cast<int>(result.problems.size()) < kMaxReportedProblems)
    result.problems.push_back({kind, std::move(message)});
}

std::string Verifier::at(Pos pos) const {
  return "rank " + std::to_string(pos.rank) + " action " +
         std::to_string(pos.index) + " (" + describe(get(pos)) + ")";
}

bool Verifier::checkTopLevel() {
  numStages = schedule.numStages;
  numMicrobatches = schedule.numMicrobatches;
  numRanks = schedule.getNumRanks();
  bool ok = true;
  if (numStages < 1) {
    report(VerifyProblemKind::Malformed,
           "expected at least one stage, got " + std::to_string(numStages));
    ok = false;
  }
  if (numMicrobatches < 1) {
    report(VerifyProblemKind::Malformed,
           "expected at least one micro-batch, got " +
               std::to_string(numMicrobatches));
    ok = false;
  }
  if (numRanks < 1) {
    report(VerifyProblemKind::Malformed, "expected at least one rank, got 0");
    ok = false;
  }
  if (!ok)
    return false;
  if (static_cast<int>(schedule.stageToRank.size()) != numStages) {
    report(VerifyProblemKind::Malformed,
           "stage map has " + std::to_string(schedule.stageToRank.size()) +
               " entries for " + std::to_string(numStages) + " stages");
    return false;
  }
  for (int s = 0; s < numStages; ++s) {
    int rank = schedule.stageToRank[s];
    if (rank < 0 || rank >= numRanks) {
      report(VerifyProblemKind::Malformed,
             "stage " + std::to_string(s) + " maps to rank " +
                 std::to_string(rank) + ", out of range for " +
                 std::to_string(numRanks) + " ranks");
      ok = false;
    }
  }
  if (!ok)
    return false;
  std::vector<int> stagesPerRank(numRanks, 0);
  for (int s = 0; s < numStages; ++s)
    ++stagesPerRank[schedule.stageToRank[s]];
  for (int r = 0; r < numRanks; ++r) {
    if (stagesPerRank[r] == 0) {
      report(VerifyProblemKind::Malformed,
             "rank " + std::to_string(r) + " runs no stage");
      ok = false;
    }
  }
  // Every (stage, micro-batch) needs a forward and a backward: a schedule
  // with fewer actions is incomplete, and checking it further would size
  // tables by the claimed shape rather than by the input.
  int64_t numActions = 0;
  for (const std::vector<Action> &program : schedule.ranks)
    numActions += static_cast<int64_t>(program.size());
  // A forward-only schedule needs the forwards alone.
  int64_t needed = (schedule.forwardOnly ? 1 : 2) *
                   static_cast<int64_t>(numStages) * numMicrobatches;
  if (numActions < needed) {
    report(VerifyProblemKind::Coverage,
           std::to_string(numStages) + " stages x " +
               std::to_string(numMicrobatches) +
               " micro-batches need at "
               "least " +
               std::to_string(needed) +
               (schedule.forwardOnly ? " forward actions"
                                     : " forward and backward actions") +
               ", the schedule has " + std::to_string(numActions) +
               " actions in all");
    ok = false;
  }
  return ok;
}

void Verifier::checkActions() {
  valid.resize(numRanks);
  for (int r = 0; r < numRanks; ++r) {
    const std::vector<Action> &program = schedule.ranks[r];
    valid[r].assign(program.size(), false);
    for (int i = 0, e = static_cast<int>(program.size()); i < e; ++i) {
      const Action &action = program[i];
      auto where = [&] { return at(r, i); };
      if (action.stage < 0 || action.stage >= numStages) {
        report(VerifyProblemKind::Malformed,
               where() + ": stage " + std::to_string(action.stage) +
                   " out of range for " + std::to_string(numStages) +
                   " stages");
        continue;
      }
      if (schedule.stageToRank[action.stage] != r) {
        report(VerifyProblemKind::Malformed,
               where() + ": stage " + std::to_string(action.stage) +
                   " runs on rank " +
                   std::to_string(schedule.stageToRank[action.stage]));
        continue;
      }
      if (hasMicrobatch(action.kind)) {
        if (action.microbatch < 0 || action.microbatch >= numMicrobatches) {
          report(VerifyProblemKind::Malformed,
                 where() + ": micro-batch " +
                     std::to_string(action.microbatch) + " out of range for " +
                     std::to_string(numMicrobatches) + " micro-batches");
          continue;
        }
      } else if (action.microbatch != -1) {
        report(VerifyProblemKind::Malformed,
               where() + ": expected no micro-batch, got " +
                   std::to_string(action.microbatch));
        continue;
      }
      if (!isTransferKind(action.kind)) {
        valid[r][i] = true;
        continue;
      }
      int other = getNeighbourStage(action);
      if (other < 0 || other >= numStages) {
        report(VerifyProblemKind::Malformed,
               where() + ": stage " + std::to_string(action.stage) +
                   " has no " + (other > action.stage ? "next" : "previous") +
                   " stage");
        continue;
      }
      int peer = schedule.stageToRank[other];
      if (peer == r) {
        report(VerifyProblemKind::Malformed,
               where() + ": stages " +
                   std::to_string(std::min(action.stage, other)) + " and " +
                   std::to_string(std::max(action.stage, other)) +
                   " both run on rank " + std::to_string(r) +
                   " and hand data over in memory");
        continue;
      }
      // Wrong peers, bytes and dtypes are reported but the action still
      // pairs by (direction, stage, micro-batch).
      valid[r][i] = true;
      if (action.peer != peer)
        report(VerifyProblemKind::Malformed,
               where() + ": expected peer rank " + std::to_string(peer) +
                   ", the rank of stage " + std::to_string(other));
      if (action.bytes < 0)
        report(VerifyProblemKind::Malformed,
               where() + ": negative payload of " +
                   std::to_string(action.bytes) + " bytes");
      if (action.dtype.empty())
        report(VerifyProblemKind::Malformed,
               where() + ": payload has no dtype");
    }
  }
}

void Verifier::indexActions() {
  size_t cells = static_cast<size_t>(numStages) * numMicrobatches;
  for (auto *table : {&forwards, &backwards, &inputs, &weights, &remats, &sendF,
                      &recvF, &sendB, &recvB})
    table->assign(cells, {});
  steps.assign(numStages, {});
  reduceGrads.assign(numStages, {});
  for (int r = 0; r < numRanks; ++r) {
    const std::vector<Action> &program = schedule.ranks[r];
    for (int i = 0, e = static_cast<int>(program.size()); i < e; ++i) {
      if (!valid[r][i])
        continue;
      const Action &a = program[i];
      Pos pos{r, i};
      switch (a.kind) {
      case ActionKind::Forward:
        slot(forwards, a.stage, a.microbatch).push_back(pos);
        break;
      case ActionKind::Backward:
        slot(backwards, a.stage, a.microbatch).push_back(pos);
        break;
      case ActionKind::BackwardInput:
        slot(inputs, a.stage, a.microbatch).push_back(pos);
        break;
      case ActionKind::BackwardWeight:
        slot(weights, a.stage, a.microbatch).push_back(pos);
        break;
      case ActionKind::Recompute:
        slot(remats, a.stage, a.microbatch).push_back(pos);
        break;
      case ActionKind::SendF:
        slot(sendF, a.stage, a.microbatch).push_back(pos);
        break;
      case ActionKind::RecvF:
        slot(recvF, a.stage, a.microbatch).push_back(pos);
        break;
      case ActionKind::SendB:
        slot(sendB, a.stage, a.microbatch).push_back(pos);
        break;
      case ActionKind::RecvB:
        slot(recvB, a.stage, a.microbatch).push_back(pos);
        break;
      case ActionKind::ReduceGrad:
        reduceGrads[a.stage].push_back(pos);
        break;
      case ActionKind::Step:
        steps[a.stage].push_back(pos);
        break;
      case ActionKind::SumTied:
      case ActionKind::ClipGrad:
        // Placed per rank: checkOrder.
        break;
      }
    }
  }
}

std::string listIndices(const std::vector<Pos> &list) {
  std::string text;
  for (size_t i = 0; i < list.size(); ++i) {
    if (i)
      text += i + 1 == list.size() ? " and " : ", ";
    text += std::to_string(list[i].index);
  }
  return text;
}

/// "never", "once (action 3)", "2 times (actions 3 and 7)".
std::string times(const std::vector<Pos> &list) {
  if (list.empty())
    return "never";
  if (list.size() == 1)
    return "once (action " + std::to_string(list[0].index) + ")";
  return std::to_string(list.size()) + " times (actions " + listIndices(list) +
         ")";
}

void Verifier::checkCoverage() {
  for (int s = 0; s < numStages; ++s) {
    for (int mb = 0; mb < numMicrobatches; ++mb) {
      auto name = [&] {
        return "stage " + std::to_string(s) + " micro-batch " +
               std::to_string(mb);
      };
      auto onRank = [&] {
        return "rank " + std::to_string(schedule.stageToRank[s]);
      };
      const std::vector<Pos> &f = slot(forwards, s, mb);
      const std::vector<Pos> &b = slot(backwards, s, mb);
      const std::vector<Pos> &in = slot(inputs, s, mb);
      const std::vector<Pos> &w = slot(weights, s, mb);
      const std::vector<Pos> &re = slot(remats, s, mb);
      // The first action of `lists` in program order (all on the stage's
      // rank), so that a finding about what is missing still names one.
      auto firstOf = [](std::initializer_list<const std::vector<Pos> *> lists) {
        Pos first;
        for (const std::vector<Pos> *list : lists)
          for (Pos pos : *list)
            if (first.rank < 0 || pos.index < first.index)
              first = pos;
        return first;
      };
      // "rank R actions I, J and K" of the backward work (B, I, W) in
      // program order.
      auto backwardWork = [&] {
        std::vector<Pos> all(b);
        all.insert(all.end(), in.begin(), in.end());
        all.insert(all.end(), w.begin(), w.end());
        std::sort(all.begin(), all.end(),
                  [](Pos x, Pos y) { return x.index < y.index; });
        return onRank() + (all.size() == 1 ? " action " : " actions ") +
               listIndices(all);
      };
      if (f.empty()) {
        Pos user = firstOf({&b, &in, &w, &re});
        report(VerifyProblemKind::Coverage,
               name() + " has no forward" +
                   (user.rank >= 0
                        ? "; its first other action is at " + at(user)
                        : std::string()));
      } else if (f.size() > 1)
        report(VerifyProblemKind::Coverage,
               name() + " has " + std::to_string(f.size()) + " forwards (" +
                   onRank() + " actions " + listIndices(f) + ")");
      bool full = b.size() == 1 && in.empty() && w.empty();
      bool split = b.empty() && in.size() == 1 && w.size() == 1;
      if (schedule.forwardOnly) {
        // Inference: the forward is all there is.
        Pos other = firstOf({&b, &in, &w, &re});
        if (other.rank >= 0)
          report(VerifyProblemKind::Coverage,
                 at(other) + " has no place in a forward-only schedule (" +
                     name() + ")");
      } else if (!full && !split) {
        if (b.empty() && in.empty() && w.empty()) {
          Pos forward = firstOf({&f});
          report(VerifyProblemKind::Coverage,
                 name() + " has no backward" +
                     (forward.rank >= 0 ? " for its forward at " + at(forward)
                                        : std::string()));
        } else if (b.size() > 1) {
          report(VerifyProblemKind::Coverage,
                 name() + " has " + std::to_string(b.size()) + " backwards (" +
                     onRank() + " actions " + listIndices(b) + ")");
        } else if (!b.empty()) {
          report(VerifyProblemKind::Coverage,
                 name() + " has both a full backward and split halves (" +
                     backwardWork() + ")");
        } else {
          report(VerifyProblemKind::Coverage,
                 name() + " has " + std::to_string(in.size()) +
                     " input-gradient and " + std::to_string(w.size()) +
                     " weight-gradient halves, expected one of each (" +
                     backwardWork() + ")");
        }
      }
      if (re.size() > 1 && !schedule.forwardOnly)
        report(VerifyProblemKind::Coverage,
               name() + " has " + std::to_string(re.size()) + " recomputes (" +
                   onRank() + " actions " + listIndices(re) + ")");
    }
    std::string stageName = "stage " + std::to_string(s);
    if (schedule.forwardOnly) {
      for (const std::vector<Pos> *list : {&steps[s], &reduceGrads[s]})
        if (!list->empty())
          report(VerifyProblemKind::Coverage,
                 at(list->front()) +
                     " has no place in a forward-only schedule (" + stageName +
                     " updates no parameters)");
      continue;
    }
    if (steps[s].empty()) {
      // Name the stage's last action, after which its step belongs.
      Pos last;
      for (int mb = 0; mb < numMicrobatches; ++mb)
        for (auto *table : {&forwards, &backwards, &inputs, &weights})
          for (Pos pos : slot(*table, s, mb))
            if (last.rank < 0 || pos.index > last.index)
              last = pos;
      report(VerifyProblemKind::Coverage,
             stageName + " has no step" +
                 (last.rank >= 0 ? "; it belongs after " + at(last)
                                 : std::string()));
    } else if (steps[s].size() > 1)
      report(VerifyProblemKind::Coverage,
             stageName + " has " + std::to_string(steps[s].size()) +
                 " steps (rank " + std::to_string(schedule.stageToRank[s]) +
                 " actions " + listIndices(steps[s]) + ")");
    if (reduceGrads[s].size() > 1)
      report(VerifyProblemKind::Coverage,
             stageName + " has " + std::to_string(reduceGrads[s].size()) +
                 " gradient reductions (rank " +
                 std::to_string(schedule.stageToRank[s]) + " actions " +
                 listIndices(reduceGrads[s]) + ")");
  }
}

void Verifier::checkOrder() {
  auto before = [&](Pos first, Pos second, const std::string &why) {
    // Both positions on the same rank by construction; report when `second`
    // does not come after `first`.
    if (first.rank < 0 || second.rank < 0 || first.index < second.index)
      return;
    report(VerifyProblemKind::Order, at(second) + " " + why + " " + at(first));
  };
  for (int s = 0; s < numStages; ++s) {
    int rank = schedule.stageToRank[s];
    bool prevCross = s > 0 && schedule.stageToRank[s - 1] != rank;
    bool nextCross = s + 1 < numStages && schedule.stageToRank[s + 1] != rank;
    // The last piece of backward work per micro-batch, for Step/ReduceGrad.
    std::vector<Pos> lastBackward;
    for (int mb = 0; mb < numMicrobatches; ++mb) {
      Pos f = unique(slot(forwards, s, mb));
      Pos full = unique(slot(backwards, s, mb));
      Pos in = unique(slot(inputs, s, mb));
      Pos w = unique(slot(weights, s, mb));
      Pos bi = full.rank >= 0 ? full : in;
      Pos re = unique(slot(remats, s, mb));
      if (s > 0) {
        if (prevCross)
          before(unique(slot(recvF, s, mb)), f,
                 "runs before its input arrives at");
        else
          before(unique(slot(forwards, s - 1, mb)), f,
                 "runs before the forward that produces its input at");
      }
      if (s + 1 < numStages && !nextCross) {
        before(unique(slot(backwards, s + 1, mb)).rank >= 0
                   ? unique(slot(backwards, s + 1, mb))
                   : unique(slot(inputs, s + 1, mb)),
               bi, "runs before the backward that produces its gradient at");
      }
      if (nextCross)
        before(f, unique(slot(sendF, s, mb)),
               "sends before its activation is produced at");
      if (prevCross)
        before(bi, unique(slot(sendB, s, mb)),
               "sends before its gradient is produced at");
      before(f, re, "recomputes before the forward at");
      before(re, bi, "runs before its recompute at");
      before(f, bi, "runs before its forward at");
      if (nextCross)
        before(unique(slot(recvB, s, mb)), bi,
               "runs before its gradient arrives at");
      before(in, w, "runs before its input-gradient half at");
      Pos last = w.rank >= 0 ? w : bi;
      if (last.rank >= 0)
        lastBackward.push_back(last);
    }
    Pos step = unique(steps[s]);
    Pos reduce = unique(reduceGrads[s]);
    for (Pos last : lastBackward) {
      if (reduce.rank >= 0 && reduce.index < last.index) {
        report(VerifyProblemKind::Order,
               at(reduce) + " reduces gradients before the backward at " +
                   at(last));
        break;
      }
    }
    for (Pos last : lastBackward) {
      if (step.rank >= 0 && step.index < last.index) {
        report(VerifyProblemKind::Order,
               at(step) + " updates parameters before the backward at " +
                   at(last));
        break;
      }
    }
    before(reduce, step, "updates parameters before its gradient reduction at");
  }
  // A rank's tied sums wait for every holder, which take them in one order:
  // at most one SUM_TIED per rank, after all its other work and before its
  // steps (the steps read the sums).
  for (int r = 0; r < numRanks; ++r) {
    const std::vector<Action> &program = schedule.ranks[r];
    int sum = -1;
    for (int i = 0, e = static_cast<int>(program.size()); i < e; ++i) {
      ActionKind kind = program[i].kind;
      if (kind == ActionKind::SumTied) {
        if (sum >= 0) {
          report(VerifyProblemKind::Order,
                 at(r, i) + " sums tied gradients a second time (first at " +
                     at(r, sum) + "); one SUM_TIED per rank");
          break;
        }
        sum = i;
        continue;
      }
      if (sum >= 0 && kind != ActionKind::Step &&
          kind != ActionKind::ClipGrad) {
        report(VerifyProblemKind::Order,
               at(r, i) + " follows the tied gradient sum at " + at(r, sum) +
                   "; it must come after all of the rank's other work");
        break;
      }
      if (sum < 0 && kind == ActionKind::Step) {
        for (int j = i + 1; j < e; ++j)
          if (program[j].kind == ActionKind::SumTied) {
            report(VerifyProblemKind::Order,
                   at(r, j) +
                       " sums tied gradients after the parameter "
                       "update at " +
                       at(r, i) + "; SUM_TIED comes before the steps");
            break;
          }
        break;
      }
    }
  }
  // Gradient clipping hands a sum of squares along every rank and the total
  // back: with any CLIP_GRAD, every rank has exactly one, after all its
  // other work (its tied sum included) and before its steps.
  int clipping = -1;
  for (int r = 0; r < numRanks && clipping < 0; ++r)
    for (const Action &a : schedule.ranks[r])
      if (a.kind == ActionKind::ClipGrad)
        clipping = r;
  for (int r = 0; r < numRanks && clipping >= 0; ++r) {
    const std::vector<Action> &program = schedule.ranks[r];
    if (std::none_of(program.begin(), program.end(), [](const Action &a) {
          return a.kind == ActionKind::ClipGrad;
        })) {
      report(VerifyProblemKind::Order,
             "rank " + std::to_string(r) + " has no CLIP_GRAD while rank " +
                 std::to_string(clipping) +
                 " clips: the gradient norm needs every rank");
      continue;
    }
    int clip = -1;
    bool bad = false;
    for (int i = 0, e = static_cast<int>(program.size()); i < e && !bad; ++i) {
      ActionKind kind = program[i].kind;
      if (kind == ActionKind::ClipGrad) {
        if (clip >= 0) {
          report(VerifyProblemKind::Order,
                 at(r, i) + " clips gradients a second time (first at " +
                     at(r, clip) + "); one CLIP_GRAD per rank");
          bad = true;
        }
        clip = i;
      } else if (clip >= 0 && kind != ActionKind::Step) {
        report(VerifyProblemKind::Order,
               at(r, i) + " follows the gradient clipping at " + at(r, clip) +
                   "; it must come after all of the rank's other work");
        bad = true;
      } else if (clip < 0 && kind == ActionKind::Step) {
        report(VerifyProblemKind::Order,
               at(r, i) + " updates parameters before the rank clips its "
                          "gradients; CLIP_GRAD comes before the steps");
        bad = true;
      }
    }
  }
  // Steps come last on every rank.
  for (int r = 0; r < numRanks; ++r) {
    const std::vector<Action> &program = schedule.ranks[r];
    int firstStep = -1;
    for (int i = 0, e = static_cast<int>(program.size()); i < e; ++i) {
      ActionKind kind = program[i].kind;
      if (kind == ActionKind::Step) {
        if (firstStep < 0)
          firstStep = i;
        continue;
      }
      if (firstStep >= 0 && kind != ActionKind::ReduceGrad) {
        report(VerifyProblemKind::Order,
               at(r, i) + " follows the parameter update at " +
                   at(r, firstStep) + "; steps must come last");
        break;
      }
    }
  }
}

void Verifier::checkPairing() {
  for (int b = 0; b + 1 < numStages; ++b) {
    int upstream = schedule.stageToRank[b];
    int downstream = schedule.stageToRank[b + 1];
    if (upstream == downstream)
      continue;
    for (int mb = 0; mb < numMicrobatches; ++mb) {
      for (bool forward : {true, false}) {
        // Inference: no gradient crosses a boundary.
        if (!forward && schedule.forwardOnly) {
          for (const std::vector<Pos> *list :
               {&slot(sendB, b + 1, mb), &slot(recvB, b, mb)})
            for (Pos pos : *list)
              report(VerifyProblemKind::Unmatched,
                     at(pos) + " has no place in a forward-only schedule "
                               "(no gradient crosses a boundary)");
          continue;
        }
        const std::vector<Pos> &sends =
            forward ? slot(sendF, b, mb) : slot(sendB, b + 1, mb);
        const std::vector<Pos> &recvs =
            forward ? slot(recvF, b + 1, mb) : slot(recvB, b, mb);
        int src = forward ? upstream : downstream;
        int dst = forward ? downstream : upstream;
        Action send =
            Action::compute(forward ? ActionKind::SendF : ActionKind::SendB,
                            forward ? b : b + 1, mb);
        Action recv =
            Action::compute(forward ? ActionKind::RecvF : ActionKind::RecvB,
                            forward ? b + 1 : b, mb);
        if (sends.size() == 1 && recvs.size() == 1) {
          const Action &s = get(sends[0]);
          const Action &r = get(recvs[0]);
          if (s.bytes != r.bytes || s.dtype != r.dtype)
            report(VerifyProblemKind::Mismatch,
                   at(sends[0]) + " sends " + std::to_string(s.bytes) +
                       " bytes of " + (s.dtype.empty() ? "?" : s.dtype) +
                       " but " + at(recvs[0]) + " receives " +
                       std::to_string(r.bytes) + " bytes of " +
                       (r.dtype.empty() ? "?" : r.dtype));
          continue;
        }
        if (sends.empty() && recvs.empty()) {
          report(VerifyProblemKind::Unmatched,
                 std::string("the ") + (forward ? "activation" : "gradient") +
                     " of micro-batch " + std::to_string(mb) +
                     " never crosses boundary " + std::to_string(b) + ": no " +
                     toString(send) + " on rank " + std::to_string(src) +
                     " and no " + toString(recv) + " on rank " +
                     std::to_string(dst));
          continue;
        }
        if (sends.size() == 1 && recvs.empty()) {
          report(VerifyProblemKind::Unmatched,
                 at(sends[0]) + " has no matching receive (no " +
                     toString(recv) + " on rank " + std::to_string(dst) + ")");
          continue;
        }
        if (sends.empty() && recvs.size() == 1) {
          report(VerifyProblemKind::Unmatched,
                 at(recvs[0]) + " has no matching send (no " + toString(send) +
                     " on rank " + std::to_string(src) + ")");
          continue;
        }
        report(VerifyProblemKind::Unmatched,
               "rank " + std::to_string(src) + " runs " + toString(send) + " " +
                   times(sends) + " and rank " + std::to_string(dst) +
                   " runs " + toString(recv) + " " + times(recvs) +
                   "; expected exactly one of each");
      }
    }
  }
}

void Verifier::simulate() {
  RendezvousResult run = runRendezvous(schedule);
  const std::vector<int> &pc = run.stoppedAt;
  auto done = [&](int r) { return run.isFinished(schedule, r); };

  // Each stuck rank waits for exactly one peer: walk the waits-for graph.
  enum State { Finished, Stuck, Reported };
  std::vector<int> state(numRanks);
  for (int r = 0; r < numRanks; ++r)
    state[r] = done(r) ? Finished : Stuck;
  auto peerOf = [&](int r) { return schedule.ranks[r][pc[r]].peer; };
  auto edge = [&](int r) {
    Pos pos{r, pc[r]};
    return "rank " + std::to_string(r) + " waits for rank " +
           std::to_string(peerOf(r)) + " (action " + std::to_string(pc[r]) +
           ", " + describe(get(pos)) + ")";
  };
  std::vector<int> walk(numRanks, -1);
  std::vector<int> blockedBehind;
  for (int start = 0; start < numRanks; ++start) {
    if (state[start] != Stuck || walk[start] >= 0)
      continue;
    std::vector<int> path;
    int r = start;
    while (true) {
      walk[r] = start;
      path.push_back(r);
      int p = peerOf(r);
      if (p < 0 || p >= numRanks) {
        report(VerifyProblemKind::Deadlock,
               at(r, pc[r]) + " waits forever for rank " + std::to_string(p) +
                   ", which does not exist");
        state[r] = Reported;
        break;
      }
      if (state[p] == Finished) {
        report(VerifyProblemKind::Unmatched,
               at(r, pc[r]) + " waits forever: rank " + std::to_string(p) +
                   " has finished its program without a matching " +
                   (isSendKind(get(Pos{r, pc[r]}).kind) ? "receive" : "send"));
        state[r] = Reported;
        break;
      }
      if (walk[p] == start) {
        // A cycle from p back to p along the path.
        auto it = std::find(path.begin(), path.end(), p);
        std::string message = "deadlock: ";
        for (auto c = it; c != path.end(); ++c) {
          if (c != it)
            message += ", ";
          message += edge(*c);
          state[*c] = Reported;
        }
        report(VerifyProblemKind::Deadlock, message);
        break;
      }
      if (walk[p] >= 0)
        break; // joins a walk reported before
      r = p;
    }
    for (int q : path)
      if (state[q] == Stuck)
        blockedBehind.push_back(q);
  }
  if (!blockedBehind.empty()) {
    std::sort(blockedBehind.begin(), blockedBehind.end());
    std::string message;
    for (size_t i = 0; i < blockedBehind.size(); ++i) {
      if (i)
        message += ", ";
      message += edge(blockedBehind[i]);
    }
    report(VerifyProblemKind::Deadlock,
           "blocked behind the stuck ranks above: " + message);
  }
}

VerifyResult Verifier::run() {
  if (checkTopLevel()) {
    checkActions();
    indexActions();
    checkCoverage();
    checkOrder();
    checkPairing();
    simulate();
  }
  if (result.ok()) {
    size_t numActions = 0;
    for (const std::vector<Action> &program : schedule.ranks)
      numActions += program.size();
    result.summary = "schedule is valid: " + std::to_string(numRanks) +
                     " ranks, " + std::to_string(numStages) + " stages, " +
                     std::to_string(numMicrobatches) + " micro-batches, " +
                     std::to_string(numActions) + " actions";
    return result;
  }
  std::string counts;
  for (int k = 0; k < 6; ++k) {
    if (!countByKind[k])
      continue;
    if (!counts.empty())
      counts += ", ";
    counts += std::to_string(countByKind[k]) + " " +
              getKindName(static_cast<VerifyProblemKind>(k));
  }
  result.summary =
      "schedule is invalid: " + std::to_string(result.numProblems) +
      " problem" + (result.numProblems == 1 ? "" : "s") + " (" + counts + ")";
  if (result.numProblems > static_cast<int>(result.problems.size()))
    result.summary +=
        ", first " + std::to_string(result.problems.size()) + " shown";
  return result;
}

} // namespace

VerifyResult mlir::gpipe::verifySchedule(const Schedule &schedule) {
  return Verifier(schedule).run();
}
