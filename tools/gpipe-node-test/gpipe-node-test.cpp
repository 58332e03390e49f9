//===- gpipe-node-test.cpp - ONNX's node tests through the interpreter ----===//
//
// Runs ONNX's backend node tests (one ONNX node per model, with inputs and
// expected outputs: test/Frontend/ONNX/NodeTests) through gpipe: each case is
// imported as is (no canonicalization, no layers; for inference, as
// gpipe-compile --inference does, so that a BatchNormalization of running
// statistics is taken, and put in inference mode by nn-inference when it
// has one), its `forward` function interpreted on the case's inputs, and
// every result compared with ONNX's expected output. Usage:
//
//   gpipe-node-test CASES_DIR [--filter SUBSTR] [--verbose] [--isolate=false]
//                   [--compiled]
//
// CASES_DIR/INDEX lists "<case> <op type>" per line; CASES_DIR/<case> holds
// model.onnx and data.safetensors, whose tensors "in.<input>" and
// "out.<output>" are the first data set and whose metadata "inputs" and
// "outputs" (JSON lists) give the graph's input and output order. A result
// must have the expected shape and element type; integers and booleans must
// match exactly, floats within |got - want| <= 1e-5 + 1e-4 * |want| (NaN
// matching NaN, infinities matching exactly). Prints one line per failing
// case with the reason, the pass count per op type, and a final
// "node tests: P passed, F failed (X% of N)". Each case runs in a child
// process (--isolate=false runs them in this one): a crash fails that case
// alone. Exits 0 whatever passed (the caller judges the rate); 1 only when
// CASES_DIR cannot be read.
//
// --compiled also takes every case that passes through the code a user
// runs: gpipe-compile --inference (1 stage, 1 micro-batch) and gpipe-run
// --predict on the case's inputs, its one output compared with ONNX's as
// above. A case gpipe-compile or gpipe-run refuses (inputs that do not
// share a batch dim, element types the data files do not carry) is counted
// as refused, with the tool's first error; a compiled result that differs
// is printed as COMPILED-WRONG, and the summary line
// "compiled forward: M match, W differ, R refused (of P passed)" follows.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"
#include "gpipe/Frontend/ONNXImporter.h"
#include "gpipe/InitAllDialects.h"
#include "gpipe/Interpreter/Interpreter.h"
#include "gpipe/Runtime/SafeTensors.h"

#include "../common/SingleThreadedBlas.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::gpipe;
namespace cl = llvm::cl;
namespace rt = ::gpipe::rt;

static cl::opt<std::string> casesDir(cl::Positional, cl::Required,
                                     cl::desc("<cases directory>"));
static cl::opt<std::string>
    filter("filter", cl::desc("Run only the cases whose name contains this"),
           cl::value_desc("substring"), cl::init(""));
static cl::opt<bool>
    verbose("verbose",
            cl::desc("Also list the passing cases, and every diagnostic of a "
                     "failing one"));
static cl::opt<bool>
    isolate("isolate",
            cl::desc("Run each case in a child process, so that a crash "
                     "fails that case alone"),
            cl::init(true));
static cl::opt<bool> compiled(
    "compiled",
    cl::desc("Also compile each passing case with gpipe-compile --inference "
             "and run it with gpipe-run --predict, comparing its output"));

/// Tolerances for floating-point results.
static constexpr double absoluteTolerance = 1e-5;
static constexpr double relativeTolerance = 1e-4;

namespace {

/// One case of the index.
struct Case {
  std::string name;
  std::string op;
};

/// How a case ended.
enum class Outcome : char {
  Pass = 'P',
  /// The case's files cannot be read, or do not fit the function.
  Setup = 'S',
  /// The importer refused the model.
  Import = 'I',
  /// The interpreter reported an error.
  Run = 'R',
  /// A result differs from ONNX's.
  Wrong = 'W',
  /// The case's process died.
  Crash = 'C',
};

struct Result {
  Outcome outcome = Outcome::Pass;
  std::string reason;
  /// Every error diagnostic, one line each (for --verbose).
  std::vector<std::string> errors;
};

} // namespace

/// `text` on one line.
static std::string oneLine(llvm::StringRef text) {
  std::string line;
  for (char c : text.trim())
    line += (c == '\n' || c == '\r') ? ' ' : c;
  return line;
}

static std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  return "[" +
         llvm::join(llvm::map_range(
                        shape, [](int64_t d) { return std::to_string(d); }),
                    ", ") +
         "]";
}

/// Element `index` of `data` (of `dtype`) as a double; integers and booleans
/// convert exactly up to 2^53.
static double elementAsDouble(const void *data, gpipe_rt_dtype dtype,
                              int64_t index) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  switch (dtype) {
  case GPIPE_RT_F32: {
    float v;
    std::memcpy(&v, bytes + index * sizeof(float), sizeof(float));
    return v;
  }
  case GPIPE_RT_F64: {
    double v;
    std::memcpy(&v, bytes + index * sizeof(double), sizeof(double));
    return v;
  }
  case GPIPE_RT_I64: {
    int64_t v;
    std::memcpy(&v, bytes + index * sizeof(int64_t), sizeof(int64_t));
    return double(v);
  }
  case GPIPE_RT_I32: {
    int32_t v;
    std::memcpy(&v, bytes + index * sizeof(int32_t), sizeof(int32_t));
    return v;
  }
  case GPIPE_RT_BOOL:
    return bytes[index];
  default:
    return NAN;
  }
}

/// Element `index` of an integer or boolean tensor, exactly.
static int64_t elementAsInt(const void *data, gpipe_rt_dtype dtype,
                            int64_t index) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  if (dtype == GPIPE_RT_I64) {
    int64_t v;
    std::memcpy(&v, bytes + index * sizeof(int64_t), sizeof(int64_t));
    return v;
  }
  if (dtype == GPIPE_RT_I32) {
    int32_t v;
    std::memcpy(&v, bytes + index * sizeof(int32_t), sizeof(int32_t));
    return v;
  }
  return bytes[index];
}

/// The row-major multi-index of flat element `index` of `shape`.
static std::string indexString(llvm::ArrayRef<int64_t> shape, int64_t index) {
  std::vector<int64_t> position(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    position[d] = shape[d] ? index % shape[d] : 0;
    index = shape[d] ? index / shape[d] : 0;
  }
  return shapeString(position);
}

static std::string formatValue(double v, gpipe_rt_dtype dtype) {
  if (dtype != GPIPE_RT_F32 && dtype != GPIPE_RT_F64)
    return std::to_string(int64_t(v));
  char text[32];
  std::snprintf(text, sizeof(text), "%.*g", dtype == GPIPE_RT_F32 ? 9 : 17, v);
  return text;
}

/// The tensor `name` of `file` as a host tensor, or the reason it cannot be
/// read.
static std::optional<HostTensor> readTensor(const rt::SafeTensorsFile &file,
                                            llvm::StringRef name,
                                            std::string &reason) {
  const rt::SafeTensorInfo *info = file.find(name.str());
  if (!info) {
    reason = "data.safetensors has no tensor '" + name.str() + "'";
    return std::nullopt;
  }
  std::optional<gpipe_rt_dtype> dtype = rt::toRuntimeDType(info->dtype);
  if (!dtype) {
    reason = "tensor '" + name.str() + "' has element type " +
             rt::safeTensorsDTypeName(info->dtype) +
             ", which gpipe does not support";
    return std::nullopt;
  }
  HostTensor tensor(*dtype, info->shape);
  if (tensor.getByteSize() != info->byteSize()) {
    reason = "tensor '" + name.str() + "' has a malformed size";
    return std::nullopt;
  }
  if (info->byteSize())
    std::memcpy(tensor.getMutableData(), file.data(*info), info->byteSize());
  return tensor;
}

/// The metadata entry `key` of `file`, a JSON list of names.
static std::optional<std::vector<std::string>>
readNameList(const rt::SafeTensorsFile &file, llvm::StringRef key,
             std::string &reason) {
  auto it = file.metadata().find(key.str());
  if (it == file.metadata().end()) {
    reason = "data.safetensors has no metadata '" + key.str() + "'";
    return std::nullopt;
  }
  llvm::Expected<std::vector<std::string>> names =
      llvm::json::parse<std::vector<std::string>>(it->second);
  if (!names) {
    reason = "metadata '" + key.str() +
             "' is not a list of names: " + llvm::toString(names.takeError());
    return std::nullopt;
  }
  return *names;
}

/// Compares result `got` with the expected `want` of output `name`; returns
/// the reason they differ, or nothing when they match.
static std::optional<std::string>
compare(llvm::StringRef name, const HostTensor &got, const HostTensor &want) {
  std::string where = "output '" + name.str() + "'";
  if (got.getDType() != want.getDType())
    return where + " has element type " + gpipe_rt_dtype_name(got.getDType()) +
           ", expected " + gpipe_rt_dtype_name(want.getDType());
  if (got.getShape() != want.getShape())
    return where + " has shape " + shapeString(got.getShape()) + ", expected " +
           shapeString(want.getShape());
  gpipe_rt_dtype dtype = want.getDType();
  int64_t count = want.getNumElements();
  bool isFloat = dtype == GPIPE_RT_F32 || dtype == GPIPE_RT_F64;
  if (!isFloat && dtype != GPIPE_RT_I64 && dtype != GPIPE_RT_I32 &&
      dtype != GPIPE_RT_BOOL)
    return where + " has element type " + gpipe_rt_dtype_name(dtype) +
           ", which this tool cannot compare";

  int64_t mismatches = 0, worst = -1;
  double worstExcess = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (!isFloat) {
      if (elementAsInt(got.getData(), dtype, i) !=
          elementAsInt(want.getData(), dtype, i)) {
        if (worst < 0)
          worst = i;
        ++mismatches;
      }
      continue;
    }
    double g = elementAsDouble(got.getData(), dtype, i);
    double w = elementAsDouble(want.getData(), dtype, i);
    double excess;
    if (std::isnan(w) || std::isnan(g))
      excess = std::isnan(w) && std::isnan(g) ? 0 : INFINITY;
    else if (std::isinf(w) || std::isinf(g))
      excess = g == w ? 0 : INFINITY;
    else
      excess = std::abs(g - w) /
               (absoluteTolerance + relativeTolerance * std::abs(w));
    if (excess <= 1)
      continue;
    ++mismatches;
    if (worst < 0 || excess > worstExcess) {
      worst = i;
      worstExcess = excess;
    }
  }
  if (!mismatches)
    return std::nullopt;
  return llvm::formatv(
             "{0} differs at {1}: got {2}, expected {3} ({4} of {5} "
             "elements differ)",
             where, indexString(want.getShape(), worst),
             formatValue(elementAsDouble(got.getData(), dtype, worst), dtype),
             formatValue(elementAsDouble(want.getData(), dtype, worst), dtype),
             mismatches, count)
      .str();
}

/// Runs case `dir` in this process.
static Result runCase(const DialectRegistry &registry, llvm::StringRef dir) {
  Result result;
  auto fail = [&](Outcome outcome, std::string reason) {
    result.outcome = outcome;
    result.reason = std::move(reason);
    return result;
  };
  auto firstError = [&]() {
    return result.errors.empty() ? std::string("(no diagnostic)")
                                 : result.errors.front();
  };

  MLIRContext context(registry);
  context.disableMultithreading();
  context.loadAllAvailableDialects();
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      result.errors.push_back(oneLine(diag.str()));
    return success();
  });

  std::string reason;
  llvm::SmallString<256> dataPath(dir);
  llvm::sys::path::append(dataPath, "data.safetensors");
  rt::SafeTensorsFile data;
  if (rt::Status s = rt::SafeTensorsFile::read(dataPath.str().str(), data);
      !s.ok())
    return fail(Outcome::Setup, "cannot read data: " + oneLine(s.message()));
  std::optional<std::vector<std::string>> inputNames =
      readNameList(data, "inputs", reason);
  if (!inputNames)
    return fail(Outcome::Setup, reason);
  std::optional<std::vector<std::string>> outputNames =
      readNameList(data, "outputs", reason);
  if (!outputNames)
    return fail(Outcome::Setup, reason);

  // Imported as for inference: the node tests check forward computations,
  // and a BatchNormalization of running statistics is one. Such a batch norm
  // takes its inference meaning in nn-inference, run as gpipe-compile
  // --inference does (only then: it wants a single result).
  ONNXImportOptions options;
  options.inference = true;
  llvm::SmallString<256> modelPath(dir);
  llvm::sys::path::append(modelPath, "model.onnx");
  OwningOpRef<ModuleOp> module = importONNXFile(&context, modelPath, options);
  if (!module)
    return fail(Outcome::Import, "import failed: " + firstError());
  auto func = module->lookupSymbol<func::FuncOp>(options.funcName);
  if (!func)
    return fail(Outcome::Import,
                "import failed: no function '" + options.funcName + "'");
  if (!func.getOps<nn::BatchNormOp>().empty() &&
      failed(nn::prepareForInference(func)))
    return fail(Outcome::Import, "nn-inference failed: " + firstError());

  // The arguments, by the graph input each one is named after (initializers
  // and consumed inputs are not arguments); unnamed ones by position.
  std::vector<HostTensor> args;
  for (BlockArgument arg : func.getArguments()) {
    std::string input;
    if (auto nameLoc = dyn_cast<NameLoc>(arg.getLoc()))
      input = nameLoc.getName().str();
    else if (arg.getArgNumber() < inputNames->size())
      input = (*inputNames)[arg.getArgNumber()];
    else
      return fail(Outcome::Setup, "argument " +
                                      std::to_string(arg.getArgNumber()) +
                                      " matches no graph input");
    std::optional<HostTensor> value = readTensor(data, "in." + input, reason);
    if (!value)
      return fail(Outcome::Setup, reason);
    if (value->getType(&context) != arg.getType()) {
      std::string type;
      llvm::raw_string_ostream os(type);
      os << arg.getType();
      return fail(Outcome::Import, "argument '" + input + "' is " + type +
                                       " but its data is " +
                                       value->getTypeString());
    }
    args.push_back(std::move(*value));
  }

  FailureOr<ParameterStore> params = ParameterStore::fromModule(*module);
  if (failed(params))
    return fail(Outcome::Run, "parameters: " + firstError());
  FailureOr<std::vector<HostTensor>> results =
      interpretFunction(func, args, *params);
  if (failed(results))
    return fail(Outcome::Run, "interpreter: " + firstError());

  if (results->size() != outputNames->size())
    return fail(Outcome::Wrong,
                "forward returns " + std::to_string(results->size()) +
                    " results for " + std::to_string(outputNames->size()) +
                    " graph outputs");
  for (auto [output, got] : llvm::zip(*outputNames, *results)) {
    std::optional<HostTensor> want = readTensor(data, "out." + output, reason);
    if (!want)
      return fail(Outcome::Setup, reason);
    if (std::optional<std::string> mismatch = compare(output, got, *want))
      return fail(Outcome::Wrong, *mismatch);
  }
  return result;
}

/// Runs case `dir` in a child process, so that a crash (an assertion, a
/// fault) fails that case alone. The child sends the outcome, the reason
/// and the errors through a pipe, one per line.
static Result runCaseIsolated(const DialectRegistry &registry,
                              llvm::StringRef dir) {
  llvm::outs().flush();
  llvm::errs().flush();
  int fds[2];
  if (::pipe(fds) != 0)
    return runCase(registry, dir);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return runCase(registry, dir);
  }
  if (pid == 0) {
    ::close(fds[0]);
    Result result = runCase(registry, dir);
    std::string message(1, char(result.outcome));
    message += "\n" + result.reason + "\n";
    for (const std::string &error : result.errors)
      message += error + "\n";
    for (size_t done = 0; done < message.size();) {
      ssize_t n = ::write(fds[1], message.data() + done, message.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      done += size_t(n);
    }
    // No destructors or atexit handlers: the parent owns the streams.
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string message;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    message.append(buffer, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  Result result;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(message).split(lines, '\n', /*MaxSplit=*/-1,
                                 /*KeepEmpty=*/true);
  if (lines.size() < 2 || lines[0].size() != 1) {
    result.outcome = Outcome::Crash;
    if (WIFSIGNALED(status))
      result.reason = "crashed (signal " + std::to_string(WTERMSIG(status)) +
                      ": " + ::strsignal(WTERMSIG(status)) + ")";
    else
      result.reason =
          "exited with status " +
          std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
          " before reporting";
    return result;
  }
  result.outcome = Outcome(lines[0][0]);
  result.reason = lines[1].str();
  for (llvm::StringRef error : llvm::drop_begin(lines, 2))
    if (!error.empty())
      result.errors.push_back(error.str());
  return result;
}

namespace {
/// How the compiled forward of a case ended.
struct CompiledResult {
  enum Kind { Match, Differs, Refused } kind = Match;
  std::string reason;
};
} // namespace

/// The first line of `path` that holds "error:", from there on, or the
/// file's first line.
static std::string firstError(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!text)
    return "(no output)";
  llvm::SmallVector<llvm::StringRef> lines;
  (*text)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines)
    if (size_t at = line.find("error:"); at != llvm::StringRef::npos)
      return line.substr(at).trim().str();
  return lines.empty() ? "(no output)" : lines.front().trim().str();
}

/// Runs `program` with `args`, its stdout and stderr to `log`; whether it
/// exited 0.
static bool runTool(llvm::StringRef program, llvm::ArrayRef<std::string> args,
                    llvm::StringRef log) {
  llvm::SmallVector<llvm::StringRef> argv = {program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), log, log};
  return llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects) == 0;
}

/// Case `dir` (which passed in the interpreter) compiled for inference by
/// `compiler` and run by `runner` in a fresh directory under `scratch`.
static CompiledResult runCompiled(llvm::StringRef dir, llvm::StringRef compiler,
                                  llvm::StringRef runner,
                                  llvm::StringRef scratch) {
  CompiledResult result;
  auto refuse = [&](std::string reason) {
    result.kind = CompiledResult::Refused;
    result.reason = std::move(reason);
    return result;
  };
  std::string reason;
  llvm::SmallString<256> dataPath(dir);
  llvm::sys::path::append(dataPath, "data.safetensors");
  rt::SafeTensorsFile data;
  if (rt::Status s = rt::SafeTensorsFile::read(dataPath.str().str(), data);
      !s.ok())
    return refuse("cannot read data: " + oneLine(s.message()));
  std::optional<std::vector<std::string>> inputs =
      readNameList(data, "inputs", reason);
  std::optional<std::vector<std::string>> outputs =
      readNameList(data, "outputs", reason);
  if (!inputs || !outputs)
    return refuse(reason);
  if (outputs->size() != 1)
    return refuse("gpipe-run --predict saves one output; the case has " +
                  std::to_string(outputs->size()));

  llvm::SmallString<256> work(scratch);
  llvm::sys::path::append(work, llvm::sys::path::filename(dir));
  if (std::error_code ec = llvm::sys::fs::create_directories(work))
    return refuse("cannot create " + work.str().str() + ": " + ec.message());
  auto in = [&](llvm::StringRef name) {
    llvm::SmallString<256> path(work);
    llvm::sys::path::append(path, name);
    return path.str().str();
  };

  // The graph inputs by their ONNX names (the initializers the extraction
  // made constant are in the model).
  std::vector<rt::SafeTensorRef> tensors;
  for (const std::string &name : *inputs) {
    const rt::SafeTensorInfo *info = data.find("in." + name);
    if (!info)
      continue;
    tensors.push_back({name, info->dtype, info->shape, data.data(*info),
                       size_t(info->byteSize())});
  }
  if (rt::Status s = rt::writeSafeTensors(in("inputs.safetensors"), tensors);
      !s.ok())
    return refuse("cannot write the inputs: " + oneLine(s.message()));

  llvm::SmallString<256> model(dir);
  llvm::sys::path::append(model, "model.onnx");
  if (!runTool(compiler,
               {model.str().str(), "--inference", "--stages", "1",
                "--microbatches", "1", "--quiet", "-o", in("model.so")},
               in("compile.log")))
    return refuse("gpipe-compile: " + firstError(in("compile.log")));
  if (!runTool(runner,
               {in("model.so"), "--predict", "--data", in("inputs.safetensors"),
                "--save-outputs", in("outputs.safetensors")},
               in("run.log")))
    return refuse("gpipe-run: " + firstError(in("run.log")));

  rt::SafeTensorsFile saved;
  if (rt::Status s =
          rt::SafeTensorsFile::read(in("outputs.safetensors"), saved);
      !s.ok())
    return refuse("cannot read the outputs: " + oneLine(s.message()));
  std::optional<HostTensor> got = readTensor(saved, "output", reason);
  std::optional<HostTensor> want =
      got ? readTensor(data, "out." + outputs->front(), reason) : std::nullopt;
  if (!got || !want) {
    result.kind = CompiledResult::Differs;
    result.reason = reason;
    return result;
  }
  if (std::optional<std::string> mismatch =
          compare(outputs->front(), *got, *want)) {
    result.kind = CompiledResult::Differs;
    result.reason = *mismatch;
  }
  return result;
}

int main(int argc, char **argv) {
  // The interpreter's kernels call OpenBLAS.
  gpipe_tools::ensureSingleThreadedBlas(argv);
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv, "gpipe-node-test: ONNX's node tests through gpipe\n");

  llvm::SmallString<256> indexPath(casesDir);
  llvm::sys::path::append(indexPath, "INDEX");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> index =
      llvm::MemoryBuffer::getFile(indexPath, /*IsText=*/true);
  if (!index) {
    llvm::errs() << "gpipe-node-test: error: cannot read " << indexPath << ": "
                 << index.getError().message() << "\n";
    return 1;
  }
  std::vector<Case> cases;
  llvm::SmallVector<llvm::StringRef> lines;
  (*index)->getBuffer().split(lines, '\n', /*MaxSplit=*/-1,
                              /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    auto [name, op] = line.trim().split(' ');
    if (name.empty() || !name.contains(filter))
      continue;
    cases.push_back({name.str(), op.trim().empty() ? "?" : op.trim().str()});
  }

  DialectRegistry registry;
  registerAllDialects(registry);

  // Per op type: passed, total. Failures by outcome.
  std::map<std::string, std::pair<int, int>> perOp;
  std::map<Outcome, int> failures;
  int passed = 0;

  // --compiled: the tools beside this one, and a scratch directory.
  std::string compiler, runner;
  llvm::SmallString<256> scratch;
  int compiledMatch = 0, compiledDiffer = 0, compiledRefused = 0;
  if (compiled) {
    std::string self = llvm::sys::fs::getMainExecutable(
        argv[0], reinterpret_cast<void *>(&runCompiled));
    llvm::StringRef bin = llvm::sys::path::parent_path(self);
    compiler = (bin + "/gpipe-compile").str();
    runner = (bin + "/gpipe-run").str();
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("gpipe-node-test", scratch)) {
      llvm::errs() << "gpipe-node-test: error: cannot create a scratch "
                      "directory: "
                   << ec.message() << "\n";
      return 1;
    }
  }
  for (const Case &c : cases) {
    llvm::SmallString<256> dir(casesDir);
    llvm::sys::path::append(dir, c.name);
    Result result =
        isolate ? runCaseIsolated(registry, dir) : runCase(registry, dir);
    auto &[opPassed, opTotal] = perOp[c.op];
    ++opTotal;
    if (result.outcome == Outcome::Pass) {
      ++passed;
      ++opPassed;
      if (verbose)
        llvm::outs() << "PASS " << c.name << " (" << c.op << ")\n";
      if (compiled) {
        CompiledResult r = runCompiled(dir, compiler, runner, scratch);
        if (r.kind == CompiledResult::Match) {
          ++compiledMatch;
        } else if (r.kind == CompiledResult::Differs) {
          ++compiledDiffer;
          llvm::outs() << "COMPILED-WRONG " << c.name << " (" << c.op
                       << "): " << oneLine(r.reason) << "\n";
        } else {
          ++compiledRefused;
          if (verbose)
            llvm::outs() << "COMPILED-REFUSED " << c.name << " (" << c.op
                         << "): " << oneLine(r.reason) << "\n";
        }
      }
      continue;
    }
    ++failures[result.outcome];
    llvm::outs() << "FAIL " << c.name << " (" << c.op
                 << "): " << oneLine(result.reason) << "\n";
    if (verbose)
      for (const std::string &error : result.errors)
        llvm::outs() << "  error: " << error << "\n";
  }

  llvm::outs() << "\n";
  for (const auto &[op, counts] : perOp)
    llvm::outs() << llvm::formatv("{0,-26} {1}/{2}\n", op, counts.first,
                                  counts.second);
  int total = int(cases.size());
  llvm::outs() << llvm::formatv(
      "failures: {0} refused by the importer, {1} interpreter errors, {2} "
      "wrong results, {3} crashes, {4} unreadable cases\n",
      failures[Outcome::Import], failures[Outcome::Run],
      failures[Outcome::Wrong], failures[Outcome::Crash],
      failures[Outcome::Setup]);
  double rate = total ? 100.0 * passed / total : 0.0;
  llvm::outs() << llvm::formatv("node tests: {0} passed, {1} failed ({2:F1}% "
                                "of {3})\n",
                                passed, total - passed, rate, total);
  if (compiled) {
    llvm::outs() << llvm::formatv(
        "compiled forward: {0} match, {1} differ, {2} refused (of {3} "
        "passed)\n",
        compiledMatch, compiledDiffer, compiledRefused, passed);
    llvm::sys::fs::remove_directories(scratch);
  }
  return 0;
}
