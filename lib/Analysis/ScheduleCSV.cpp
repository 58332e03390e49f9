//===- ScheduleCSV.cpp - PyTorch-compatible schedule CSV -----------------===//
//
// The CSV writer and reader of schedules in the action format PyTorch's
// pipelining uses (one row per rank).
//
//===----------------------------------------------------------------------===//

#include "ScheduleInternal.h"

#include "gpipe/Analysis/Schedule.h"
#include "gpipe/Analysis/Timeline.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

using namespace mlir::gpipe;

std::string mlir::gpipe::toCSV(const Schedule &schedule) {
  std::string text;
  for (const std::vector<Action> &program : schedule.ranks) {
    for (size_t i = 0; i < program.size(); ++i) {
      if (i)
        text += ',';
      text += toString(program[i]);
    }
    text += '\n';
  }
  return text;
}

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

/// Parses a non-negative decimal of at most 9 digits; -1 if it is not one.
int parseSmallInt(std::string_view digits) {
  if (digits.empty() || digits.size() > 9)
    return -1;
  int value = 0;
  for (char c : digits) {
    if (!isDigit(c))
      return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool parseKindName(std::string_view name, ActionKind &kind) {
  static const std::pair<const char *, ActionKind> kNames[] = {
      {"F", ActionKind::Forward},
      {"B", ActionKind::Backward},
      {"I", ActionKind::BackwardInput},
      {"W", ActionKind::BackwardWeight},
      {"R", ActionKind::Recompute},
      {"SEND_F", ActionKind::SendF},
      {"RECV_F", ActionKind::RecvF},
      {"SEND_B", ActionKind::SendB},
      {"RECV_B", ActionKind::RecvB},
      {"REDUCE_GRAD", ActionKind::ReduceGrad},
      {"SUM_TIED", ActionKind::SumTied},
      {"CLIP_GRAD", ActionKind::ClipGrad},
      {"STEP", ActionKind::Step},
  };
  for (const auto &[text, value] : kNames) {
    if (name == text) {
      kind = value;
      return true;
    }
  }
  return false;
}

/// PyTorch action types that have no effect in gpipe's model: the reader
/// accepts them (checking stage and micro-batch like any other cell) and
/// drops them. UNSHARD and RESHARD gather and free FSDP-sharded parameters,
/// which only FSDP does; a stage's parameters are never sharded here.
/// WAIT_SEND_F and WAIT_SEND_B wait for an asynchronous send to finish; here
/// a send finishes at the rendezvous with its receive. WAIT_REDUCE_GRAD waits
/// for an asynchronous REDUCE_GRAD; here REDUCE_GRAD is complete when it
/// returns. Sets `withMicrobatch` to whether the spelling carries one.
bool parseIgnoredKindName(std::string_view name, bool &withMicrobatch) {
  static const std::pair<const char *, bool> kNames[] = {
      {"UNSHARD", false},    {"RESHARD", false},          {"WAIT_SEND_F", true},
      {"WAIT_SEND_B", true}, {"WAIT_REDUCE_GRAD", false},
  };
  for (const auto &[text, value] : kNames) {
    if (name == text) {
      withMicrobatch = value;
      return true;
    }
  }
  return false;
}

/// PyTorch's composite cell `(<action>;<action>...)OVERLAP_F_B`: compute
/// actions the library may overlap (DualPipeV pairs one stage's forward with
/// another's backward). The reader replaces it by its sub-actions in order.
constexpr std::string_view kOverlapSuffix = "OVERLAP_F_B";

constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

} // namespace

ScheduleOrError mlir::gpipe::parseCSV(std::string_view text, int numStages,
                                      int numMicrobatches,
                                      const BoundaryTraffic &traffic) {
  ScheduleOrError result;
  if (numStages < 1) {
    result.error =
        "expected at least one stage, got " + std::to_string(numStages);
    return result;
  }
  if (numMicrobatches < 1) {
    result.error = "expected at least one micro-batch, got " +
                   std::to_string(numMicrobatches);
    return result;
  }

  // A UTF-8 byte-order mark (spreadsheet exports write one) is not a cell.
  if (text.substr(0, 3) == kUtf8ByteOrderMark)
    text.remove_prefix(3);

  // Split into lines; a final newline does not start another rank.
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    if (eol == std::string_view::npos) {
      lines.push_back(text);
      break;
    }
    lines.push_back(text.substr(0, eol));
    text.remove_prefix(eol + 1);
  }
  if (lines.empty()) {
    result.error = "expected one line per rank, got an empty schedule";
    return result;
  }

  struct Cell {
    Action action;
    int column;
  };
  int numRanks = static_cast<int>(lines.size());
  std::vector<std::vector<Cell>> cells(numRanks);
  for (int r = 0; r < numRanks; ++r) {
    std::string_view line = lines[r];
    int column = 0;
    // The sub-actions of a composite cell not read yet, in order; they are
    // read as cells of the composite's column.
    std::vector<std::string_view> subCells;
    for (bool more = true; more || !subCells.empty();) {
      std::string_view cell;
      bool isSubCell = !subCells.empty();
      if (isSubCell) {
        cell = trim(subCells.front());
        subCells.erase(subCells.begin());
      } else {
        ++column;
        size_t comma = line.find(',');
        std::string_view raw = line.substr(0, comma);
        more = comma != std::string_view::npos;
        if (more)
          line.remove_prefix(comma + 1);
        cell = trim(raw);
        if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"')
          cell = trim(cell.substr(1, cell.size() - 2));
      }
      if (cell.empty())
        continue;
      std::string where = "line " + std::to_string(r + 1) + " (rank " +
                          std::to_string(r) + ") column " +
                          std::to_string(column) + ": ";
      std::string quoted = "'" + std::string(cell) + "'";
      if (cell.front() == '(') {
        size_t close = cell.find(')');
        if (isSubCell || close == std::string_view::npos ||
            cell.substr(close + 1) != kOverlapSuffix) {
          result.error = where + "malformed composite action " + quoted +
                         ", expected (<action>;<action>)" +
                         std::string(kOverlapSuffix);
          return result;
        }
        std::string_view inner = cell.substr(1, close - 1);
        if (trim(inner).empty()) {
          result.error =
              where + "composite action " + quoted + " holds no action";
          return result;
        }
        for (bool moreSub = true; moreSub;) {
          size_t semicolon = inner.find(';');
          subCells.push_back(inner.substr(0, semicolon));
          moreSub = semicolon != std::string_view::npos;
          if (moreSub)
            inner.remove_prefix(semicolon + 1);
        }
        continue;
      }
      size_t kindBegin = 0;
      while (kindBegin < cell.size() && isDigit(cell[kindBegin]))
        ++kindBegin;
      size_t kindEnd = kindBegin;
      while (kindEnd < cell.size() &&
             ((cell[kindEnd] >= 'A' && cell[kindEnd] <= 'Z') ||
              cell[kindEnd] == '_'))
        ++kindEnd;
      std::string_view stageText = cell.substr(0, kindBegin);
      std::string_view kindText = cell.substr(kindBegin, kindEnd - kindBegin);
      std::string_view mbText = cell.substr(kindEnd);
      if (stageText.empty() || kindText.empty()) {
        result.error = where + "malformed action " + quoted +
                       ", expected <stage><type><micro-batch> such as '1F0'";
        return result;
      }
      ActionKind kind = ActionKind::Forward;
      bool withMicrobatch = false, ignored = false;
      if (parseKindName(kindText, kind)) {
        withMicrobatch = hasMicrobatch(kind);
      } else if (parseIgnoredKindName(kindText, withMicrobatch)) {
        ignored = true;
      } else {
        result.error = where + "unknown action type '" + std::string(kindText) +
                       "' in " + quoted;
        return result;
      }
      if (isSubCell && (ignored || !isComputeKind(kind))) {
        result.error = where + "action " + quoted +
                       " in a composite action, expected a compute action";
        return result;
      }
      int stage = parseSmallInt(stageText);
      if (stage < 0 || stage >= numStages) {
        result.error = where + "stage " + std::string(stageText) + " in " +
                       quoted + " out of range for " +
                       std::to_string(numStages) + " stages";
        return result;
      }
      int mb = -1;
      if (withMicrobatch) {
        if (mbText.empty()) {
          result.error = where + "action " + quoted + " needs a micro-batch";
          return result;
        }
        mb = parseSmallInt(mbText);
        if (mb < 0) {
          result.error = where + "malformed micro-batch '" +
                         std::string(mbText) + "' in " + quoted;
          return result;
        }
        if (mb >= numMicrobatches) {
          result.error = where + "micro-batch " + std::to_string(mb) + " in " +
                         quoted + " out of range for " +
                         std::to_string(numMicrobatches) + " micro-batches";
          return result;
        }
      } else if (!mbText.empty()) {
        result.error = where + "action " + quoted + " takes no micro-batch";
        return result;
      }
      if ((kind == ActionKind::SendF || kind == ActionKind::RecvB) &&
          stage == numStages - 1) {
        result.error = where + quoted + " talks to the stage after the last";
        return result;
      }
      if ((kind == ActionKind::RecvF || kind == ActionKind::SendB) &&
          stage == 0) {
        result.error = where + quoted + " talks to the stage before the first";
        return result;
      }
      if (ignored)
        continue;
      cells[r].push_back({Action::compute(kind, stage, mb), column});
    }
  }

  // Infer the stage map: each stage on exactly one rank.
  size_t numCells = 0;
  for (const std::vector<Cell> &row : cells)
    numCells += row.size();
  if (static_cast<size_t>(numStages) > numCells) {
    result.error = "expected every one of " + std::to_string(numStages) +
                   " stages on some rank, the schedule has " +
                   std::to_string(numCells) + " actions in all";
    return result;
  }
  std::vector<int> stageToRank(numStages, -1), firstColumn(numStages, 0);
  for (int r = 0; r < numRanks; ++r) {
    for (const Cell &cell : cells[r]) {
      int s = cell.action.stage;
      if (stageToRank[s] < 0) {
        stageToRank[s] = r;
        firstColumn[s] = cell.column;
      } else if (stageToRank[s] != r) {
        result.error = "stage " + std::to_string(s) + " appears on rank " +
                       std::to_string(stageToRank[s]) + " (line " +
                       std::to_string(stageToRank[s] + 1) + " column " +
                       std::to_string(firstColumn[s]) + ") and on rank " +
                       std::to_string(r) + " (line " + std::to_string(r + 1) +
                       " column " + std::to_string(cell.column) + ")";
        return result;
      }
    }
  }
  for (int s = 0; s < numStages; ++s) {
    if (stageToRank[s] < 0) {
      result.error = "stage " + std::to_string(s) + " appears on no rank";
      return result;
    }
  }

  Schedule &schedule = result.schedule;
  schedule.numStages = numStages;
  schedule.numMicrobatches = numMicrobatches;
  schedule.stageToRank = stageToRank;
  schedule.ranks.resize(numRanks);
  for (int r = 0; r < numRanks; ++r) {
    for (Cell &cell : cells[r]) {
      Action &action = cell.action;
      if (isTransferKind(action.kind)) {
        bool towardsNext = action.kind == ActionKind::SendF ||
                           action.kind == ActionKind::RecvB;
        int other = towardsNext ? action.stage + 1 : action.stage - 1;
        action.peer = stageToRank[other];
        action.bytes = traffic.getBytes(std::min(action.stage, other));
        action.dtype = traffic.dtype;
      }
      schedule.ranks[r].push_back(std::move(action));
    }
  }
  return result;
}
