//===- ModelMetadata.cpp - Parsing model metadata ---------------*- C++ -*-===//
//
// Parses the metadata JSON a compiled model carries (Program.h) into
// ModelMetadata and validates everything the engine relies on before any
// thread starts: field presence and types, the batch splitting into
// micro-batches, every stage held by exactly one rank, every parameter by
// exactly one stage, parameter, gradient and optimizer-state blocks inside
// the rank's arena and disjoint, actions well formed, and every send paired
// with exactly one receive of the same size. Errors name the JSON path of
// the offending value. Loading a model library is ModelImage.cpp's, in the
// engine.
//
// The parser never throws: JSON is parsed with exceptions disabled and every
// value's type is checked before it is read, so this builds with or without
// -fno-exceptions.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/ModelMetadata.h"
#include "gpipe/Runtime/Program.h"
#include "gpipe/Runtime/Vocabulary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace gpipe::rt {
namespace {

using Json = nlohmann::json;

std::string joinShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Reads typed fields out of JSON objects, remembering the first error with
/// the JSON path it occurred at.
class Reader {
public:
  std::string error;
  /// Parsing evaluation metadata: parameters may be "shared".
  bool evaluation = false;

  bool fail(const std::string &where, const std::string &message) {
    if (error.empty())
      error = "metadata: " + (where.empty() ? message : where + ": " + message);
    return false;
  }

  /// The member `key` of `object`, or null (an error unless `optional`).
  const Json *member(const Json &object, const std::string &where,
                     const char *key, bool optional = false) {
    if (!object.is_object()) {
      fail(where, "is not an object");
      return nullptr;
    }
    auto it = object.find(key);
    if (it == object.end()) {
      if (!optional)
        fail(where, std::string("missing '") + key + "'");
      return nullptr;
    }
    return &*it;
  }

  static std::string path(const std::string &where, const char *key) {
    return where.empty() ? std::string(key) : where + "." + key;
  }

  bool integer(const Json &object, const std::string &where, const char *key,
               int64_t &out, std::optional<int64_t> fallback = std::nullopt) {
    const Json *v = member(object, where, key, fallback.has_value());
    if (!v || v->is_null()) {
      if (fallback) {
        out = *fallback;
        return true;
      }
      return v ? fail(path(where, key), "is null, expected an integer") : false;
    }
    return toInteger(*v, path(where, key), out);
  }

  bool toInteger(const Json &v, const std::string &where, int64_t &out) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > uint64_t(INT64_MAX))
        return fail(where, "integer " + std::to_string(u) + " is too large");
      out = int64_t(u);
      return true;
    }
    if (v.is_number_integer()) {
      out = v.get<int64_t>();
      return true;
    }
    return fail(where, "expected an integer, got " + describe(v));
  }

  /// A member that `fits` (named `kind` in errors); a missing or null one
  /// takes `fallback` when there is one.
  template <typename T, typename Fits>
  bool typed(const Json &object, const std::string &where, const char *key,
             T &out, const std::optional<T> &fallback, Fits fits,
             const char *kind) {
    const Json *v = member(object, where, key, fallback.has_value());
    if (!v || (v->is_null() && fallback)) {
      if (fallback) {
        out = *fallback;
        return true;
      }
      return false;
    }
    if (!fits(*v))
      return fail(path(where, key),
                  std::string("expected ") + kind + ", got " + describe(*v));
    out = v->get<T>();
    return true;
  }

  bool number(const Json &object, const std::string &where, const char *key,
              double &out, std::optional<double> fallback = std::nullopt) {
    return typed(
        object, where, key, out, fallback,
        [](const Json &v) { return v.is_number(); }, "a number");
  }

  bool string(const Json &object, const std::string &where, const char *key,
              std::string &out,
              std::optional<std::string> fallback = std::nullopt) {
    return typed(
        object, where, key, out, fallback,
        [](const Json &v) { return v.is_string(); }, "a string");
  }

  /// An array member; null when missing (an error unless `optional`).
  const Json *array(const Json &object, const std::string &where,
                    const char *key, bool optional = false) {
    const Json *v = member(object, where, key, optional);
    if (!v)
      return nullptr;
    if (v->is_null() && optional)
      return nullptr;
    if (!v->is_array()) {
      fail(path(where, key), "expected an array, got " + describe(*v));
      return nullptr;
    }
    return v;
  }

  bool shape(const Json &object, const std::string &where, const char *key,
             std::vector<int64_t> &out) {
    const Json *v = array(object, where, key);
    if (!v)
      return false;
    out.clear();
    for (size_t i = 0; i < v->size(); ++i) {
      int64_t d;
      std::string at = path(where, key) + "[" + std::to_string(i) + "]";
      if (!toInteger((*v)[i], at, d))
        return false;
      if (d < 0)
        return fail(at, "negative dimension " + std::to_string(d));
      out.push_back(d);
    }
    return true;
  }

  static std::string describe(const Json &v) {
    switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::number_float:
      return "a non-integer number";
    default:
      return "a number";
    }
  }
};

/// The metadata's `gemm` (ModelMetadata::GemmChoice), checked against the
/// implementations the runtime knows and the grid's cell count.
bool parseGemmChoice(Reader &r, const Json &gemm,
                     ModelMetadata::GemmChoice &out) {
  const std::string where = abi::key::kGemm;
  if (!gemm.is_object())
    return r.fail(where, "expected an object, got " + Reader::describe(gemm));
  if (!r.string(gemm, where, abi::key::kGemmImpl, out.impl))
    return false;
  if (out.impl != "openblas" && out.impl != "libxsmm")
    return r.fail(where + "." + abi::key::kGemmImpl,
                  "is '" + out.impl + "' (expected openblas or libxsmm)");
  const Json *grid = r.array(gemm, where, abi::key::kGemmGrid, true);
  if (!grid)
    return true;
  for (size_t i = 0; i < grid->size(); ++i) {
    int64_t d = 0;
    std::string at =
        where + "." + abi::key::kGemmGrid + "[" + std::to_string(i) + "]";
    if (!r.toInteger((*grid)[i], at, d))
      return false;
    if (d < 1 || (!out.grid.empty() && d <= out.grid.back()))
      return r.fail(at, "is " + std::to_string(d) +
                            " (expected positive and increasing)");
    out.grid.push_back(d);
  }
  const Json *cells = r.member(gemm, where, abi::key::kGemmCells);
  if (!cells)
    return false;
  if (!cells->is_object())
    return r.fail(where + "." + abi::key::kGemmCells,
                  "expected an object, got " + Reader::describe(*cells));
  const size_t count = out.grid.size() * out.grid.size() * out.grid.size();
  static const char *const layouts[4] = {"NN", "NT", "TN", "TT"};
  for (auto it = cells->begin(); it != cells->end(); ++it) {
    std::string at = where + "." + abi::key::kGemmCells + "." + it.key();
    const char *const *layout =
        std::find(std::begin(layouts), std::end(layouts), it.key());
    if (layout == std::end(layouts))
      return r.fail(at, "is not a layout (expected NN, NT, TN or TT)");
    if (!it->is_string())
      return r.fail(at, "expected a string, got " + Reader::describe(*it));
    std::string text = it->get<std::string>();
    if (text.size() != count)
      return r.fail(at, "has " + std::to_string(text.size()) +
                            " cells; the grid has " + std::to_string(count));
    for (char c : text)
      if (c != '0' && c != '1')
        return r.fail(at, std::string("has cell '") + c +
                              "' (expected 0 = openblas or 1 = libxsmm)");
    out.cells[size_t(layout - std::begin(layouts))] = std::move(text);
  }
  return true;
}

std::optional<gpipe_rt_dtype> parseDType(const std::string &name) {
  if (name == "f32")
    return GPIPE_RT_F32;
  if (name == "i64")
    return GPIPE_RT_I64;
  if (name == "i32")
    return GPIPE_RT_I32;
  return std::nullopt;
}

/// A transfer's element type ("f32", "bf16", ...); none when the library
/// does not say or names a type the runtime has no number for.
std::optional<gpipe_rt_dtype> parsePayloadType(const std::string &name) {
  for (gpipe_rt_dtype t :
       {GPIPE_RT_F32, GPIPE_RT_F64, GPIPE_RT_F16, GPIPE_RT_BF16, GPIPE_RT_I64,
        GPIPE_RT_I32, GPIPE_RT_BOOL})
    if (name == gpipe_rt_dtype_name(t))
      return t;
  return std::nullopt;
}

bool parseTensorSpec(Reader &r, const Json &v, const std::string &where,
                     bool isLabels, TensorSpec &spec) {
  if (!r.shape(v, where, "shape", spec.shape))
    return false;
  std::string dtype;
  if (!r.string(v, where, abi::key::kDType, dtype))
    return false;
  std::optional<gpipe_rt_dtype> parsed = parseDType(dtype);
  bool allowed = parsed && (*parsed == GPIPE_RT_F32 || *parsed == GPIPE_RT_I64);
  if (!allowed)
    return r.fail(where + ".dtype",
                  "unsupported dtype '" + dtype + "' (expected f32 or i64)");
  spec.dtype = *parsed;
  if (spec.shape.empty())
    return r.fail(where + ".shape",
                  "must have at least one dimension (the batch)");
  if (spec.shape[0] < 1)
    return r.fail(where + ".shape", "batch dimension must be at least 1");
  if (isLabels && spec.dtype == GPIPE_RT_I64) {
    if (!r.integer(v, where, "classes", spec.classes))
      return false;
    if (spec.classes < 1)
      return r.fail(where + ".classes",
                    "must be at least 1, got " + std::to_string(spec.classes));
  } else if (isLabels) {
    if (!r.integer(v, where, "classes", spec.classes, 0))
      return false;
  }
  return true;
}

bool multiplyOverflows(int64_t a, int64_t b, int64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

/// The input's optional `parts`: the model's several inputs packed into
/// `input` [B, S], each with B samples, tiling a sample's S elements in
/// order.
bool parseInputParts(Reader &r, const Json &v, TensorSpec &input) {
  if (!r.string(v, "input", "name", input.name, std::string()))
    return false;
  const Json *parts = r.array(v, "input", "parts", /*optional=*/true);
  if (!parts)
    return r.error.empty();
  if (!input.name.empty())
    return r.fail("input.name", "is given with 'parts' (each part has its "
                                "own name)");
  if (parts->empty())
    return r.fail("input.parts", "is empty (omit it for a single input)");
  if (input.shape.size() != 2)
    return r.fail("input.shape", "is " + joinShape(input.shape) +
                                     "; an input with parts is packed as "
                                     "[B, S]");
  const int64_t batch = input.shape[0], row = input.shape[1];
  std::set<std::string> names;
  int64_t offset = 0;
  for (size_t i = 0; i < parts->size(); ++i) {
    const Json &p = (*parts)[i];
    std::string where = "input.parts[" + std::to_string(i) + "]";
    InputPart part;
    if (!r.string(p, where, "name", part.name) ||
        !r.shape(p, where, "shape", part.shape) ||
        !r.integer(p, where, "offset", part.offset))
      return false;
    if (part.name.empty())
      return r.fail(where + ".name", "is empty");
    if (!names.insert(part.name).second)
      return r.fail(where + ".name",
                    "'" + part.name + "' appears twice in 'input.parts'");
    if (part.shape.empty())
      return r.fail(where + ".shape",
                    "must have at least one dimension (the batch)");
    if (part.shape[0] != batch)
      return r.fail(where + ".shape", "batch " + std::to_string(part.shape[0]) +
                                          " differs from the input's " +
                                          std::to_string(batch));
    int64_t elements = 1;
    for (size_t d = 1; d < part.shape.size(); ++d)
      if (multiplyOverflows(elements, part.shape[d], elements) ||
          elements > row)
        return r.fail(where + ".shape", joinShape(part.shape) +
                                            " holds more elements per "
                                            "sample than the input's " +
                                            std::to_string(row));
    if (part.offset != offset)
      return r.fail(where + ".offset",
                    "is " + std::to_string(part.offset) + ", expected " +
                        std::to_string(offset) +
                        " (the parts tile a sample in order)");
    offset += elements;
    if (offset > row)
      return r.fail(where, "'" + part.name + "' ends at element " +
                               std::to_string(offset) +
                               ", beyond the input's " + std::to_string(row) +
                               " per sample");
    input.parts.push_back(std::move(part));
  }
  if (offset != row)
    return r.fail("input.parts", "the parts hold " + std::to_string(offset) +
                                     " elements per sample, the input " +
                                     joinShape(input.shape) + " has " +
                                     std::to_string(row));
  return true;
}

/// A byte range of a rank's arena a stage owns, for the overlap check.
struct Region {
  int64_t begin, end;
  std::string what;
};

bool parseParameters(Reader &r, const Json &root, ModelMetadata &m,
                     std::optional<size_t> dataSize) {
  const Json *params = r.array(root, "", "parameters");
  if (!params)
    return false;
  std::set<std::string> names;
  // Per parameter, the copies tied to it so far.
  std::map<size_t, int64_t> copiesOf;
  for (size_t i = 0; i < params->size(); ++i) {
    const Json &p = (*params)[i];
    std::string where = "parameters[" + std::to_string(i) + "]";
    ParameterSpec spec;
    if (!r.string(p, where, "name", spec.name) ||
        !r.shape(p, where, "shape", spec.shape))
      return false;
    if (spec.name.empty())
      return r.fail(where + ".name", "is empty");
    where = "parameter '" + spec.name + "'";
    if (!names.insert(spec.name).second)
      return r.fail(where, "appears twice in 'parameters'");
    std::string dtype;
    if (!r.string(p, where, abi::key::kDType, dtype, std::string("f32")))
      return false;
    if (dtype != "f32")
      return r.fail(where + ".dtype",
                    "unsupported dtype '" + dtype + "' (expected f32)");
    spec.elements = 1;
    for (int64_t d : spec.shape)
      if (multiplyOverflows(spec.elements, d, spec.elements) ||
          spec.elements > (INT64_MAX / 8))
        return r.fail(where + ".shape", "too many elements");
    std::string init;
    if (!r.string(p, where, "init", init))
      return false;
    if (init == "tied") {
      // A copy of an earlier parameter: the same parameter to everything
      // but SUM_TIED.
      std::string first;
      if (!r.string(p, where, "tied_to", first))
        return false;
      const ParameterSpec *root = m.findParameter(first);
      if (!root)
        return r.fail(where + ".tied_to",
                      "'" + first + "' names no earlier parameter");
      if (root->shape != spec.shape)
        return r.fail(where + ".shape",
                      "differs from the shape of '" + first + "'");
      size_t index = size_t(root - m.parameters.data());
      m.tiedCopies[spec.name] = {index, ++copiesOf[index]};
      continue;
    }
    if (init == "shared" && r.evaluation) {
      spec.init = ParamInit::Shared;
    } else if (init == "data") {
      spec.init = ParamInit::Data;
      if (!r.integer(p, where, "data_offset", spec.dataOffset))
        return false;
      if (spec.dataOffset < 0)
        return r.fail(where + ".data_offset", "is negative");
      if (dataSize &&
          uint64_t(spec.dataOffset) + uint64_t(spec.elements) * 4 > *dataSize)
        return r.fail(where + ".data_offset",
                      "bytes [" + std::to_string(spec.dataOffset) + ", " +
                          std::to_string(spec.dataOffset + spec.elements * 4) +
                          ") lie beyond the model's " +
                          std::to_string(*dataSize) + " data bytes");
    } else if (init == "zeros") {
      spec.init = ParamInit::Zeros;
    } else if (init == "ones") {
      spec.init = ParamInit::Ones;
    } else if (init == "normal" || init == "uniform") {
      spec.init = init == "normal" ? ParamInit::Normal : ParamInit::Uniform;
      if (!r.number(p, where, "scale", spec.scale))
        return false;
      if (!std::isfinite(spec.scale) || spec.scale < 0)
        return r.fail(where + ".scale", "must be finite and non-negative");
    } else {
      return r.fail(where + ".init",
                    "unknown init '" + init +
                        "' (expected data, zeros, ones, normal or uniform)");
    }
    m.parameters.push_back(std::move(spec));
  }
  return true;
}

bool parseStagePlan(Reader &r, const Json &s, const std::string &where,
                    ModelMetadata &m, RankPlan &rank,
                    std::vector<uint64_t> &parameterHolders,
                    std::vector<Region> &regions) {
  StagePlan plan;
  if (!r.integer(s, where, abi::key::kStage, plan.stage) ||
      !r.integer(s, where, "params_offset", plan.paramsOffset) ||
      !r.integer(s, where, "grads_offset", plan.gradsOffset) ||
      !r.integer(s, where, "state_offset", plan.stateOffset, -1) ||
      !r.integer(s, where, "param_bytes", plan.paramBytes))
    return false;
  if (plan.stage < 0 || plan.stage >= m.stages)
    return r.fail(where + ".stage", "stage " + std::to_string(plan.stage) +
                                        " is outside [0, " +
                                        std::to_string(m.stages) + ")");
  if (plan.paramBytes < 0 || plan.paramBytes % 4)
    return r.fail(where + ".param_bytes",
                  "must be a non-negative multiple of 4, got " +
                      std::to_string(plan.paramBytes));
  std::string stageName = "stage " + std::to_string(plan.stage);
  auto region = [&](const char *what, int64_t offset, int64_t bytes) {
    std::string name = stageName + " " + what;
    if (bytes == 0)
      return true;
    if (offset < 0 || offset % 4)
      return r.fail(where, name + " offset " + std::to_string(offset) +
                               " is negative or not a multiple of 4");
    if (offset > rank.arenaBytes || bytes > rank.arenaBytes - offset)
      return r.fail(where, name + " bytes [" + std::to_string(offset) + ", " +
                               std::to_string(offset + bytes) +
                               ") lie beyond arena_bytes " +
                               std::to_string(rank.arenaBytes));
    regions.push_back({offset, offset + bytes, name});
    return true;
  };
  // An inference model plans no gradients (grads_offset -1).
  if (m.inference && plan.gradsOffset != -1)
    return r.fail(where + ".grads_offset",
                  "an inference model has no gradients; expected -1");
  if (!region("parameters", plan.paramsOffset, plan.paramBytes) ||
      (!m.inference && !region("gradients", plan.gradsOffset, plan.paramBytes)))
    return false;
  int64_t stateBytes = plan.paramBytes * m.stateMultiple();
  if (stateBytes > 0 && plan.stateOffset < 0)
    return r.fail(where + ".state_offset",
                  "optimizer '" + std::string(getOptimizerName(m.optimizer)) +
                      "' needs state but " + stageName + " has none");
  if (!region("optimizer state", plan.stateOffset, stateBytes))
    return false;

  const Json *params = r.array(s, where, "params");
  if (!params)
    return false;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t i = 0; i < params->size(); ++i) {
    const Json &p = (*params)[i];
    std::string at = where + ".params[" + std::to_string(i) + "]";
    ParamSlot slot;
    if (!r.string(p, at, "name", slot.name) ||
        !r.integer(p, at, "offset", slot.offset) ||
        !r.integer(p, at, "elements", slot.elements))
      return false;
    const ParameterSpec *spec = m.findParameter(slot.name);
    if (auto tied = m.tiedCopies.find(slot.name); tied != m.tiedCopies.end()) {
      spec = &m.parameters[tied->second.first];
      slot.copy = tied->second.second;
      slot.name = spec->name;
    }
    if (!spec)
      return r.fail(at, "parameter '" + slot.name +
                            "' is not in the 'parameters' list");
    slot.parameter = size_t(spec - m.parameters.data());
    if (slot.elements != spec->elements)
      return r.fail(at, "parameter '" + slot.name + "' has " +
                            std::to_string(slot.elements) +
                            " elements here but its shape " +
                            joinShape(spec->shape) + " has " +
                            std::to_string(spec->elements));
    if (slot.offset < 0 || slot.offset % 4 || slot.offset > plan.paramBytes ||
        slot.elements * 4 > plan.paramBytes - slot.offset)
      return r.fail(at, "parameter '" + slot.name + "' at offset " +
                            std::to_string(slot.offset) + " (" +
                            std::to_string(slot.elements * 4) +
                            " bytes) does not fit the stage's param_bytes " +
                            std::to_string(plan.paramBytes));
    // Each copy of a parameter is held once.
    if (parameterHolders[slot.parameter] & (uint64_t(1) << (slot.copy & 63)))
      return r.fail(at,
                    "parameter '" + slot.name +
                        (slot.copy ? " (copy " + std::to_string(slot.copy) + ")"
                                   : std::string()) +
                        "' is held by more than one stage");
    parameterHolders[slot.parameter] |= uint64_t(1) << (slot.copy & 63);
    if (slot.elements)
      ranges.push_back({slot.offset, slot.offset + slot.elements * 4});
    plan.params.push_back(std::move(slot));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return r.fail(where + ".params", "parameters overlap at byte " +
                                           std::to_string(ranges[i].first));

  // Running statistics: after the trainable bytes, one pair per batch norm.
  if (!r.integer(s, where, "trainable_bytes", plan.trainableBytes,
                 plan.paramBytes))
    return false;
  if (plan.trainableBytes < 0 || plan.trainableBytes % 4 ||
      plan.trainableBytes > plan.paramBytes)
    return r.fail(where + ".trainable_bytes",
                  std::to_string(plan.trainableBytes) +
                      " is not a multiple of 4 in [0, param_bytes " +
                      std::to_string(plan.paramBytes) + "]");
  if (s.contains("running_stats")) {
    const Json *stats = r.array(s, where, "running_stats");
    if (!stats)
      return false;
    std::vector<std::pair<int64_t, int64_t>> used;
    for (size_t i = 0; i < stats->size(); ++i) {
      const Json &e = (*stats)[i];
      std::string at = where + ".running_stats[" + std::to_string(i) + "]";
      RunningStatsSlot slot;
      if (!r.integer(e, at, "mean", slot.meanOffset) ||
          !r.integer(e, at, "var", slot.varOffset) ||
          !r.integer(e, at, "channels", slot.channels) ||
          !r.integer(e, at, "count", slot.count) ||
          !r.number(e, at, "momentum", slot.momentum))
        return false;
      if (slot.channels < 1 || slot.count < 2 ||
          !(slot.momentum >= 0.0 && slot.momentum <= 1.0))
        return r.fail(at, "needs channels >= 1, count >= 2 and momentum in "
                          "[0, 1]");
      for (int64_t offset : {slot.meanOffset, slot.varOffset}) {
        if (offset % 4 || offset < plan.trainableBytes ||
            offset > plan.paramBytes ||
            slot.channels * 4 > plan.paramBytes - offset)
          return r.fail(at, "statistics at byte " + std::to_string(offset) +
                                " do not lie after the trainable bytes " +
                                std::to_string(plan.trainableBytes) +
                                " within param_bytes " +
                                std::to_string(plan.paramBytes));
        used.push_back({offset, offset + slot.channels * 4});
      }
      plan.runningStats.push_back(slot);
    }
    std::sort(used.begin(), used.end());
    for (size_t i = 1; i < used.size(); ++i)
      if (used[i].first < used[i - 1].second)
        return r.fail(where + ".running_stats",
                      "statistics overlap at byte " +
                          std::to_string(used[i].first));
  }
  for (const ParamSlot &slot : plan.params)
    if (slot.offset >= plan.trainableBytes && slot.elements > 0) {
      bool listed = false;
      for (const RunningStatsSlot &stats : plan.runningStats)
        listed |=
            slot.offset == stats.meanOffset || slot.offset == stats.varOffset;
      if (!listed)
        return r.fail(where, "parameter '" + slot.name +
                                 "' lies after the trainable bytes but is no "
                                 "batch norm's running statistic");
      m.parameters[slot.parameter].runningStatistic = true;
    }
  rank.stages.push_back(std::move(plan));
  return true;
}

/// Checks the micro-batch of an action (a loop's after it set it).
bool checkActionMicrobatch(Reader &r, const std::string &where,
                           const ModelMetadata &m, const ActionSpec &action) {
  bool perStep = !abi::hasMicrobatch(action.kind);
  if (perStep && action.mb != -1)
    return r.fail(where + ".mb", std::string(actionKindName(action.kind)) +
                                     " must have mb -1, got " +
                                     std::to_string(action.mb));
  if (!perStep && (action.mb < 0 || action.mb >= m.microbatches))
    return r.fail(where + ".mb", "micro-batch " + std::to_string(action.mb) +
                                     " is outside [0, " +
                                     std::to_string(m.microbatches) + ")");
  return true;
}

/// The tag of a transfer whose metadata leaves it out (the compiler's
/// compact programs): the one the vocabulary defines for its boundary and
/// micro-batch, which its peer computes the same way.
int64_t computeTag(const ModelMetadata &m, const ActionSpec &a) {
  return abi::getTransferTag(abi::getTransferBoundary(a.kind, a.stage), a.mb,
                             m.microbatches, a.direction());
}

/// One action entry of a rank's program. A transfer's kind (SEND_F, RECV_B,
/// ...) is known once its direction is read; the kind is checked first so
/// that errors come in the order of the entry's keys. In a loop's body the
/// micro-batch is an offset and the tag is left to the expansion.
bool parseAction(Reader &r, const Json &a, const std::string &where,
                 const ModelMetadata &m, const RankPlan &rank, int64_t numRanks,
                 ActionSpec &action, bool inLoop) {
  namespace key = abi::key;
  std::string kind;
  if (!r.string(a, where, key::kKind, kind))
    return false;
  std::optional<ActionKind> parsed =
      abi::parseActionKindMetadataName(kind, abi::Direction::Forward);
  if (!parsed)
    return r.fail(where + ".kind", "unknown action kind '" + kind + "'");
  action.kind = *parsed;
  if (!r.integer(a, where, key::kStage, action.stage) ||
      !r.integer(a, where, key::kMicrobatch, action.mb))
    return false;
  if (!rank.findStage(action.stage))
    return r.fail(where + ".stage", "rank " + std::to_string(rank.rank) +
                                        " does not hold stage " +
                                        std::to_string(action.stage));
  if (!inLoop && !checkActionMicrobatch(r, where, m, action))
    return false;
  if (abi::isTransferKind(action.kind)) {
    std::string direction, dtype;
    if (!r.integer(a, where, key::kPeer, action.peer) ||
        !r.string(a, where, key::kDirection, direction) ||
        !r.integer(a, where, key::kTag, action.tag, -1) ||
        !r.integer(a, where, key::kBytes, action.bytes) ||
        !r.string(a, where, key::kDType, dtype, std::string()))
      return false;
    if (action.peer < 0 || action.peer >= numRanks || action.peer == rank.rank)
      return r.fail(where + ".peer", "peer " + std::to_string(action.peer) +
                                         " is not another rank");
    std::optional<Direction> dir = abi::parseDirection(direction);
    if (!dir)
      return r.fail(where + ".direction",
                    "expected 'forward' or 'backward', got '" + direction +
                        "'");
    action.kind = abi::getTransferKind(abi::isSendKind(action.kind), *dir);
    // Only f32 payloads are inspected for non-finite values; other element
    // types (or none named) travel unchecked.
    action.payload = parsePayloadType(dtype);
    if (action.bytes < 0)
      return r.fail(where + ".bytes", "is negative");
    if (action.tag < 0 && !inLoop)
      action.tag = computeTag(m, action);
  }
  return true;
}

/// The runtime's action records of one rank, from its metadata "actions"
/// array: the one place that reads the array. Each entry is an action, or
/// a loop `{"loop": {"lower": L, "upper": U, "body": [...]}}` whose body
/// actions run for mb = L .. U-1 with their "mb" added to it (the
/// compiler's micro-batch loops: the program's size does not grow with M,
/// the expanded list does).
bool parseRankActions(Reader &r, const Json &rankJson,
                      const std::string &rankWhere, const ModelMetadata &m,
                      int64_t numRanks, RankPlan &rank) {
  const Json *actions = r.array(rankJson, rankWhere, abi::key::kActions);
  if (!actions)
    return false;
  std::string where = rankWhere + ".actions";
  for (size_t ai = 0; ai < actions->size(); ++ai) {
    const Json &entry = (*actions)[ai];
    std::string at = where + "[" + std::to_string(ai) + "]";
    const Json *loop = entry.is_object() && entry.contains(abi::key::kLoop)
                           ? &entry[abi::key::kLoop]
                           : nullptr;
    if (!loop) {
      ActionSpec action;
      if (!parseAction(r, entry, at, m, rank, numRanks, action,
                       /*inLoop=*/false))
        return false;
      rank.actions.push_back(action);
      continue;
    }
    at += std::string(".") + abi::key::kLoop;
    int64_t lower = 0, upper = 0;
    if (!r.integer(*loop, at, abi::key::kLower, lower) ||
        !r.integer(*loop, at, abi::key::kUpper, upper))
      return false;
    if (lower < 0 || upper <= lower || upper > m.microbatches)
      return r.fail(at, "loop bounds [" + std::to_string(lower) + ", " +
                            std::to_string(upper) + ") are not inside [0, " +
                            std::to_string(m.microbatches) + ")");
    const Json *body = r.array(*loop, at, abi::key::kBody);
    if (!body)
      return false;
    // Each body action is checked at the loop's first and last micro-batch
    // (its micro-batch grows with the loop's); the expansion then only
    // copies.
    std::vector<ActionSpec> templates(body->size());
    for (size_t bi = 0; bi < body->size(); ++bi) {
      std::string bodyAt =
          at + "." + abi::key::kBody + "[" + std::to_string(bi) + "]";
      if (!parseAction(r, (*body)[bi], bodyAt, m, rank, numRanks, templates[bi],
                       /*inLoop=*/true))
        return false;
      for (int64_t mb : {lower, upper - 1}) {
        ActionSpec edge = templates[bi];
        edge.mb += mb;
        if (!checkActionMicrobatch(r, bodyAt, m, edge))
          return false;
      }
    }
    for (int64_t mb = lower; mb < upper; ++mb)
      for (const ActionSpec &spec : templates) {
        ActionSpec action = spec;
        action.mb += mb;
        if (action.isTransfer() && action.tag < 0)
          action.tag = computeTag(m, action);
        rank.actions.push_back(action);
      }
  }
  return true;
}

std::string describeAction(const RankPlan &rank, size_t index) {
  const ActionSpec &a = rank.actions[index];
  std::ostringstream os;
  os << "rank " << rank.rank << " action " << index << " ("
     << actionKindName(a.kind) << " "
     << abi::getDirectionName(abi::getDirection(a.kind)) << " mb " << a.mb
     << (abi::isSendKind(a.kind) ? " to rank " : " from rank ") << a.peer
     << ", tag " << a.tag << ", " << a.bytes << " bytes)";
  return os.str();
}

/// Every send pairs with exactly one receive (same sender, receiver, tag),
/// of the same size and direction.
bool checkTransfers(Reader &r, const ModelMetadata &m) {
  // (sender, receiver, tag) -> (rank, action index)
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<size_t, size_t>>
      sends, recvs;
  for (size_t ri = 0; ri < m.ranks.size(); ++ri) {
    const RankPlan &rank = m.ranks[ri];
    for (size_t ai = 0; ai < rank.actions.size(); ++ai) {
      const ActionSpec &a = rank.actions[ai];
      if (!abi::isTransferKind(a.kind))
        continue;
      bool isSend = abi::isSendKind(a.kind);
      auto key = isSend ? std::make_tuple(rank.rank, a.peer, a.tag)
                        : std::make_tuple(a.peer, rank.rank, a.tag);
      auto &table = isSend ? sends : recvs;
      auto [it, inserted] = table.insert({key, {ri, ai}});
      if (!inserted)
        return r.fail(
            std::string(abi::key::kRanks) + "[" + std::to_string(ri) + "]." +
                abi::key::kActions + "[" + std::to_string(ai) + "]",
            describeAction(rank, ai) + " reuses the tag of " +
                describeAction(m.ranks[it->second.first], it->second.second));
    }
  }
  for (auto &[key, send] : sends) {
    const RankPlan &sr = m.ranks[send.first];
    auto it = recvs.find(key);
    if (it == recvs.end())
      return r.fail(std::string(abi::key::kRanks) + "[" +
                        std::to_string(send.first) + "]",
                    describeAction(sr, send.second) +
                        " has no matching recv on rank " +
                        std::to_string(std::get<1>(key)));
    const RankPlan &rr = m.ranks[it->second.first];
    const ActionSpec &sa = sr.actions[send.second];
    const ActionSpec &ra = rr.actions[it->second.second];
    if (sa.bytes != ra.bytes ||
        abi::getDirection(sa.kind) != abi::getDirection(ra.kind))
      return r.fail(std::string(abi::key::kRanks) + "[" +
                        std::to_string(send.first) + "]",
                    describeAction(sr, send.second) + " does not match " +
                        describeAction(rr, it->second.second));
    recvs.erase(it);
  }
  if (!recvs.empty()) {
    auto &recv = recvs.begin()->second;
    return r.fail(std::string(abi::key::kRanks) + "[" +
                      std::to_string(recv.first) + "]",
                  describeAction(m.ranks[recv.first], recv.second) +
                      " has no matching send");
  }
  return true;
}

bool parseRanks(Reader &r, const Json &root, ModelMetadata &m) {
  const Json *ranks = r.array(root, "", abi::key::kRanks);
  if (!ranks)
    return false;
  if (ranks->empty())
    return r.fail(abi::key::kRanks, "is empty");
  int64_t numRanks = int64_t(ranks->size());
  // Every stage is held by a rank: more stages than the ranks list cannot
  // be (and are not allocated for).
  int64_t listed = 0;
  for (const Json &rj : *ranks)
    if (rj.is_object() && rj.contains(abi::key::kStages) &&
        rj[abi::key::kStages].is_array())
      listed += int64_t(rj[abi::key::kStages].size());
  if (m.stages > listed)
    return r.fail(abi::key::kStages, "is " + std::to_string(m.stages) +
                                         ", but the ranks hold " +
                                         std::to_string(listed) + " stages");
  // Per parameter, a bit per copy held (tied parameters have several).
  std::vector<uint64_t> parameterHolders(m.parameters.size(), 0);
  std::vector<int64_t> stageHolder(size_t(m.stages), -1);
  for (size_t ri = 0; ri < ranks->size(); ++ri) {
    const Json &rj = (*ranks)[ri];
    std::string where =
        std::string(abi::key::kRanks) + "[" + std::to_string(ri) + "]";
    RankPlan rank;
    if (!r.integer(rj, where, "rank", rank.rank) ||
        !r.string(rj, where, "symbol", rank.symbol) ||
        !r.integer(rj, where, "arena_bytes", rank.arenaBytes))
      return false;
    if (rank.rank != int64_t(ri))
      return r.fail(where + ".rank", "is " + std::to_string(rank.rank) +
                                         ", expected " + std::to_string(ri));
    if (rank.symbol.empty())
      return r.fail(where + ".symbol", "is empty");
    if (rank.arenaBytes < 0)
      return r.fail(where + ".arena_bytes", "is negative");
    if (!r.integer(rj, where, "peak_bytes", rank.peakBytes, rank.arenaBytes) ||
        !r.integer(rj, where, "peak_kept_bytes", rank.peakKeptBytes, -1))
      return false;
    const Json *stages = r.array(rj, where, abi::key::kStages);
    if (!stages)
      return false;
    std::vector<Region> regions;
    for (size_t si = 0; si < stages->size(); ++si) {
      std::string at = where + ".stages[" + std::to_string(si) + "]";
      if (!parseStagePlan(r, (*stages)[si], at, m, rank, parameterHolders,
                          regions))
        return false;
      int64_t stage = rank.stages.back().stage;
      if (stageHolder[size_t(stage)] >= 0)
        return r.fail(at, "stage " + std::to_string(stage) +
                              " is also held by rank " +
                              std::to_string(stageHolder[size_t(stage)]));
      stageHolder[size_t(stage)] = rank.rank;
    }
    std::sort(
        regions.begin(), regions.end(),
        [](const Region &a, const Region &b) { return a.begin < b.begin; });
    for (size_t i = 1; i < regions.size(); ++i)
      if (regions[i].begin < regions[i - 1].end)
        return r.fail(where, regions[i - 1].what + " [" +
                                 std::to_string(regions[i - 1].begin) + ", " +
                                 std::to_string(regions[i - 1].end) +
                                 ") overlaps " + regions[i].what + " [" +
                                 std::to_string(regions[i].begin) + ", " +
                                 std::to_string(regions[i].end) + ")");
    if (!parseRankActions(r, rj, where, m, numRanks, rank))
      return false;
    m.ranks.push_back(std::move(rank));
  }
  for (int64_t s = 0; s < m.stages; ++s)
    if (stageHolder[size_t(s)] < 0)
      return r.fail(abi::key::kRanks,
                    "no rank holds stage " + std::to_string(s));
  for (size_t i = 0; i < m.parameters.size(); ++i)
    if (!parameterHolders[i])
      return r.fail("parameters", "parameter '" + m.parameters[i].name +
                                      "' is held by no stage");
  // Tied parameters: every copy held, gathered in copy order.
  std::map<size_t, std::vector<std::pair<int64_t, TiedGroup::Member>>> held;
  for (const RankPlan &rank : m.ranks)
    for (size_t s = 0; s < rank.stages.size(); ++s)
      for (size_t k = 0; k < rank.stages[s].params.size(); ++k) {
        const ParamSlot &slot = rank.stages[s].params[k];
        held[slot.parameter].push_back({slot.copy, {rank.rank, s, k}});
      }
  for (auto &[parameter, members] : held) {
    if (members.size() < 2)
      continue;
    std::sort(members.begin(), members.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    TiedGroup group;
    group.parameter = parameter;
    for (size_t c = 0; c < members.size(); ++c) {
      if (members[c].first != int64_t(c))
        return r.fail("parameters", "copy " + std::to_string(c) +
                                        " of tied parameter '" +
                                        m.parameters[parameter].name +
                                        "' is held by no stage");
      group.members.push_back(members[c].second);
    }
    m.maxTiedCopies = std::max(m.maxTiedCopies, int64_t(members.size()));
    m.tiedGroups.push_back(std::move(group));
  }
  return checkTransfers(r, m);
}

bool parseMetadata(Reader &r, const Json &root, ModelMetadata &m,
                   std::optional<size_t> dataSize);

/// `eval`, when present: the evaluation programs' metadata, which must run
/// in the training arenas (same ranks, input, micro-batches and parameter
/// slots) and produce what the training loss reads.
bool parseEvaluation(Reader &r, const Json &root, ModelMetadata &m) {
  const Json *json = r.member(root, "", "eval", true);
  if (!json)
    return true;
  Reader inner;
  inner.evaluation = true;
  auto e = std::make_shared<ModelMetadata>();
  if (!parseMetadata(inner, *json, *e, std::nullopt)) {
    std::string message = inner.error;
    if (message.rfind("metadata: ", 0) == 0)
      message.erase(0, 10);
    return r.fail("eval", message);
  }
  auto fail = [&](const std::string &what) { return r.fail("eval", what); };
  if (m.inference)
    return fail("an inference model has no evaluation programs");
  if (!e->inference || !e->output)
    return fail("the evaluation programs must be a forward-only pipeline "
                "with an output");
  if (e->numRanks() != m.numRanks() || e->microbatches != m.microbatches ||
      e->dataParallel != 1)
    return fail("the evaluation pipeline must have the training's ranks and "
                "micro-batches, and one replica");
  if (e->input.shape != m.input.shape || e->input.dtype != m.input.dtype ||
      e->input.parts.size() != m.input.parts.size())
    return fail("the evaluation pipeline's input differs from training's");
  if (!m.output || e->output->shape != m.output->shape ||
      e->output->dtype != GPIPE_RT_F32 || m.output->dtype != GPIPE_RT_F32)
    return fail("the evaluation pipeline's output must be the f32 logits "
                "the training loss reads");
  if (!m.labels || (m.loss != abi::getLossName(abi::LossKind::CrossEntropy) &&
                    m.loss != abi::getLossName(abi::LossKind::MSE)))
    return fail("evaluation needs the training loss, cross-entropy or mse");
  for (size_t r = 0; r < m.ranks.size(); ++r) {
    RankPlan &train = m.ranks[r];
    const RankPlan &eval = e->ranks[r];
    bool same = train.stages.size() == eval.stages.size();
    for (size_t i = 0; same && i < train.stages.size(); ++i) {
      const StagePlan &a = train.stages[i], &b = eval.stages[i];
      same = a.stage == b.stage && a.paramsOffset == b.paramsOffset &&
             a.params.size() == b.params.size();
      for (size_t k = 0; same && k < a.params.size(); ++k)
        same = a.params[k].name == b.params[k].name &&
               a.params[k].offset == b.params[k].offset &&
               a.params[k].elements == b.params[k].elements;
    }
    if (!same)
      return fail("rank " + std::to_string(r) +
                  "'s evaluation program does not read the training "
                  "parameters where training keeps them");
    // One arena serves both.
    train.arenaBytes = std::max(train.arenaBytes, eval.arenaBytes);
  }
  m.eval = std::move(e);
  return true;
}

bool parseMetadata(Reader &r, const Json &root, ModelMetadata &m,
                   std::optional<size_t> dataSize) {
  if (!root.is_object())
    return r.fail("top level", "is not a JSON object");
  std::string format, optimizer;
  if (!r.string(root, "", abi::key::kFormat, format))
    return false;
  if (format != abi::kMetadataFormat)
    return r.fail(abi::key::kFormat, "is '" + format + "', expected '" +
                                         abi::kMetadataFormat + "'");
  if (!r.integer(root, "", abi::key::kAbiVersion, m.abiVersion))
    return false;
  if (m.abiVersion != GPIPE_RT_ABI_VERSION)
    return r.fail(abi::key::kAbiVersion,
                  "is " + std::to_string(m.abiVersion) +
                      ", this runtime speaks " +
                      std::to_string(GPIPE_RT_ABI_VERSION));
  if (const auto it = root.find(abi::key::kTarget);
      it != root.end() && it->is_string() && *it != "cpu" && *it != "cuda")
    return r.fail(abi::key::kTarget, "is '" + it->get<std::string>() +
                                         "'; this runtime knows cpu and cuda");
  if (!r.string(root, "", "producer", m.producer, std::string()) ||
      !r.string(root, "", "source", m.source, std::string()) ||
      !r.string(root, "", abi::key::kTarget, m.target, std::string("cpu")) ||
      !r.string(root, "", abi::key::kPrecision, m.precision,
                std::string("fp32")) ||
      !r.string(root, "", abi::key::kSchedule, m.schedule, std::string()) ||
      !r.string(root, "", "loss", m.loss, std::string()) ||
      !r.string(root, "", "data_hint", m.dataHint, std::string()) ||
      !r.integer(root, "", abi::key::kStages, m.stages) ||
      !r.integer(root, "", abi::key::kMicrobatches, m.microbatches) ||
      !r.integer(root, "", "data_parallel", m.dataParallel, 1) ||
      !r.integer(root, "", abi::key::kAlignment, m.alignment) ||
      !r.integer(root, "", "vocab", m.vocab, 0) ||
      !r.number(root, "", abi::key::kClipGradNorm, m.clipGradNorm, 0.0) ||
      !r.string(root, "", abi::key::kOptimizer, optimizer))
    return false;
  if (const Json *remat = r.member(root, "", abi::key::kRemat, true))
    m.remat = remat->is_string()
                  ? remat->get<std::string>()
                  : remat->dump(-1, ' ', false, Json::error_handler_t::replace);
  if (const Json *gemm = r.member(root, "", abi::key::kGemm, true);
      gemm && !parseGemmChoice(r, *gemm, m.gemm))
    return false;
  if (m.precision != "fp32" && m.precision != "bf16")
    return r.fail(abi::key::kPrecision,
                  "is '" + m.precision + "' (expected fp32 or bf16)");
  if (m.stages < 1)
    return r.fail(abi::key::kStages, "must be at least 1");
  if (m.microbatches < 1)
    return r.fail(abi::key::kMicrobatches, "must be at least 1");
  if (!std::isfinite(m.clipGradNorm) || m.clipGradNorm < 0)
    return r.fail(abi::key::kClipGradNorm, "must be a finite bound >= 0, got " +
                                               std::to_string(m.clipGradNorm));
  if (m.dataParallel < 1 || m.dataParallel > 65536)
    return r.fail("data_parallel", "must be between 1 and 65536, got " +
                                       std::to_string(m.dataParallel));
  if (m.alignment < 1 || (m.alignment & (m.alignment - 1)) ||
      m.alignment > 4096)
    return r.fail(abi::key::kAlignment,
                  "must be a power of two up to 4096, got " +
                      std::to_string(m.alignment));
  if (m.vocab < 0)
    return r.fail("vocab", "is negative");
  if (std::optional<OptimizerKind> kind = parseOptimizerKind(optimizer))
    m.optimizer = *kind;
  else
    return r.fail(abi::key::kOptimizer, getUnknownOptimizerMessage(optimizer));

  const Json *input = r.member(root, "", "input");
  if (!input || !parseTensorSpec(r, *input, "input", false, m.input))
    return false;
  if (m.input.shape[0] % (m.microbatches * m.dataParallel))
    return r.fail(
        "input.shape",
        "batch " + std::to_string(m.input.shape[0]) +
            " is not a multiple of the " + std::to_string(m.microbatches) +
            " micro-batches" +
            (m.dataParallel > 1
                 ? " x " + std::to_string(m.dataParallel) + " replicas"
                 : std::string()));
  if (!parseInputParts(r, *input, m.input))
    return false;
  std::string mode;
  if (!r.string(root, "", "mode", mode, std::string("train")))
    return false;
  if (mode != "train" && mode != "inference")
    return r.fail("mode", "is '" + mode + "' (expected train or inference)");
  m.inference = mode == "inference";
  if (const Json *output = r.member(root, "", "output", true);
      output && !output->is_null()) {
    TensorSpec spec;
    if (!parseTensorSpec(r, *output, "output", false, spec))
      return false;
    if (spec.shape[0] != m.input.shape[0])
      return r.fail("output.shape", "batch " + std::to_string(spec.shape[0]) +
                                        " differs from the input's " +
                                        std::to_string(m.input.shape[0]));
    m.output = std::move(spec);
  }
  if (m.inference && !m.output)
    return r.fail("output", "an inference model must describe its output");
  const Json *labels = r.member(root, "", "labels");
  if (!labels)
    return false;
  if (m.inference && !labels->is_null())
    return r.fail("labels", "an inference model takes no labels");
  if (!labels->is_null()) {
    TensorSpec spec;
    if (!parseTensorSpec(r, *labels, "labels", true, spec))
      return false;
    if (spec.shape[0] != m.input.shape[0])
      return r.fail("labels.shape", "batch " + std::to_string(spec.shape[0]) +
                                        " differs from the input's " +
                                        std::to_string(m.input.shape[0]));
    m.labels = std::move(spec);
    // The data file holds the labels beside the inputs.
    for (size_t i = 0; i < m.input.parts.size(); ++i)
      if (m.input.parts[i].name == "labels")
        return r.fail("input.parts[" + std::to_string(i) + "].name",
                      "'labels' is the data's labels tensor; an input "
                      "cannot be called so");
  }

  if (const Json *predicted = r.member(root, "", "predicted", true);
      predicted && !predicted->is_null()) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    if (!r.number(*predicted, "predicted", "bubble", m.predictedBubble, nan) ||
        !r.number(*predicted, "predicted", "closed_form_bubble",
                  m.predictedClosedFormBubble, nan) ||
        !r.number(*predicted, "predicted", "step_seconds",
                  m.predictedStepSeconds, nan))
      return false;
    // Added within schema version 2: absent from older models.
    if (r.member(*predicted, "predicted", "schedule_closed_form_bubble",
                 /*optional=*/true)) {
      double own = nan;
      if (!r.number(*predicted, "predicted", "schedule_closed_form_bubble", own,
                    nan))
        return false;
      m.predictedScheduleClosedFormBubble = own;
    }
    // Added within schema version 2: per rank, the predicted compute time
    // of a step.
    if (const Json *busy = r.array(*predicted, "predicted", "busy_seconds",
                                   /*optional=*/true)) {
      for (const Json &v : *busy) {
        if (!v.is_number() || !std::isfinite(v.get<double>()) ||
            v.get<double>() < 0)
          return r.fail("predicted.busy_seconds",
                        "holds " + v.dump() +
                            ", expected non-negative seconds");
        m.predictedBusySeconds.push_back(v.get<double>());
      }
    }
    // Also within version 2: the predicted timeline, per rank [start, end]
    // microseconds of every action.
    if (const Json *ranks =
            r.array(*predicted, "predicted", "timeline", /*optional=*/true)) {
      for (size_t k = 0; k < ranks->size(); ++k) {
        const Json &times = (*ranks)[k];
        std::string where = "predicted.timeline[" + std::to_string(k) + "]";
        if (!times.is_array() || times.size() % 2 != 0)
          return r.fail(where, "expected an array of [start, end] pairs");
        std::vector<std::pair<double, double>> rank;
        for (size_t i = 0; i < times.size(); i += 2) {
          const Json &a = times[i], &b = times[i + 1];
          if (!a.is_number() || !b.is_number() ||
              !std::isfinite(a.get<double>()) ||
              !std::isfinite(b.get<double>()) || a.get<double>() < 0 ||
              b.get<double>() < a.get<double>())
            return r.fail(where, "holds [" + a.dump() + ", " + b.dump() +
                                     "], expected 0 <= start <= end");
          rank.push_back({a.get<double>(), b.get<double>()});
        }
        m.predictedTimeline.push_back(std::move(rank));
      }
    }
  }

  if (!parseParameters(r, root, m, dataSize) || !parseRanks(r, root, m))
    return false;
  if (!m.predictedBusySeconds.empty() &&
      int64_t(m.predictedBusySeconds.size()) != m.numRanks())
    return r.fail("predicted.busy_seconds",
                  "has " + std::to_string(m.predictedBusySeconds.size()) +
                      " entries for " + std::to_string(m.numRanks()) +
                      " ranks");

  if (!m.predictedTimeline.empty()) {
    if (int64_t(m.predictedTimeline.size()) != m.numRanks())
      return r.fail("predicted.timeline",
                    "has " + std::to_string(m.predictedTimeline.size()) +
                        " ranks, the model " + std::to_string(m.numRanks()));
    for (size_t k = 0; k < m.predictedTimeline.size(); ++k)
      if (m.predictedTimeline[k].size() != m.ranks[k].actions.size())
        return r.fail("predicted.timeline[" + std::to_string(k) + "]",
                      "times " + std::to_string(m.predictedTimeline[k].size()) +
                          " actions, the rank's program has " +
                          std::to_string(m.ranks[k].actions.size()));
  }

  if (const Json *info = r.array(root, "", "stage_info", true)) {
    for (size_t i = 0; i < info->size(); ++i) {
      const Json &s = (*info)[i];
      std::string where = "stage_info[" + std::to_string(i) + "]";
      StageInfo si;
      if (!r.integer(s, where, "index", si.index) ||
          !r.integer(s, where, "rank", si.rank) ||
          !r.string(s, where, "name", si.name, std::string()))
        return false;
      if (si.index < 0 || si.index >= m.stages)
        return r.fail(where + ".index",
                      "is outside [0, " + std::to_string(m.stages) + ")");
      if (si.rank < 0 || si.rank >= m.numRanks() ||
          !m.ranks[size_t(si.rank)].findStage(si.index))
        return r.fail(where + ".rank", "stage " + std::to_string(si.index) +
                                           " is not held by rank " +
                                           std::to_string(si.rank));
      if (const Json *layers = r.array(s, where, "layers", true))
        for (const Json &l : *layers)
          if (l.is_string())
            si.layers.push_back(l.get<std::string>());
      if (!r.error.empty())
        return false;
      m.stageInfo.push_back(std::move(si));
    }
  }
  if (const Json *sites = r.array(root, "", "sites", true)) {
    for (size_t i = 0; i < sites->size(); ++i) {
      std::string where = "sites[" + std::to_string(i) + "]";
      KernelSite site;
      if (!r.string((*sites)[i], where, "op", site.op) ||
          !r.string((*sites)[i], where, "loc", site.loc, std::string()) ||
          !r.string((*sites)[i], where, "function", site.function,
                    std::string()))
        return false;
      m.sites.push_back(std::move(site));
    }
  }
  return r.error.empty() && parseEvaluation(r, root, m);
}

} // namespace

//===----------------------------------------------------------------------===//
// Small queries
//===----------------------------------------------------------------------===//

const char *actionKindName(ActionKind kind) {
  return abi::getActionKindMetadataName(kind);
}

bool isComputeAction(ActionKind kind) {
  switch (kind) {
  case ActionKind::Forward:
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
  case ActionKind::BackwardWeight:
  case ActionKind::Recompute:
  case ActionKind::Step:
    return true;
  default:
    return false;
  }
}

int64_t TensorSpec::sampleElements() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

int64_t InputPart::sampleElements() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

int64_t TensorSpec::sampleBytes() const {
  return sampleElements() * int64_t(gpipe_rt_dtype_size(dtype));
}

const StagePlan *RankPlan::findStage(int64_t stage) const {
  for (const StagePlan &s : stages)
    if (s.stage == stage)
      return &s;
  return nullptr;
}

int64_t ModelMetadata::stateMultiple() const {
  return abi::getOptimizerStateFactor(optimizer);
}

bool ModelMetadata::clipsGradients() const {
  for (const RankPlan &rank : ranks)
    for (const ActionSpec &a : rank.actions)
      if (a.kind == ActionKind::ClipGrad)
        return true;
  return false;
}

std::string ModelMetadata::fingerprint() const {
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  for (const ParameterSpec &p : parameters)
    params.push_back({p.name, p.shape});
  std::vector<int64_t> sample;
  if (!input.shape.empty())
    sample.assign(input.shape.begin() + 1, input.shape.end());
  return abi::getModelFingerprint(params, sample,
                                  gpipe_rt_dtype_name(input.dtype));
}

const ParameterSpec *ModelMetadata::findParameter(std::string_view name) const {
  for (const ParameterSpec &p : parameters)
    if (p.name == name)
      return &p;
  return nullptr;
}

Status ModelMetadata::parse(std::string_view json, ModelMetadata &out,
                            std::optional<size_t> dataSize) {
  out = ModelMetadata();
  Json root = Json::parse(json.begin(), json.end(), nullptr,
                          /*allow_exceptions=*/false);
  if (root.is_discarded())
    return Status::error("metadata: is not valid JSON");
  Reader reader;
  if (!parseMetadata(reader, root, out, dataSize))
    return Status::error(reader.error.empty() ? "metadata: invalid"
                                              : reader.error);
  return Status::success();
}

} // namespace gpipe::rt
