//===- gpipe-run.cpp - Train a compiled GPipe model -------------*- C++ -*-===//
//
// Loads a model library gpipe-compile produced and trains it with the
// runtime's engine: one thread per pipeline rank in this process, data from
// a safetensors file or built in, and the optimizer given on the command
// line. Prints a header describing the pipeline, one line per step (loss,
// throughput, each rank's busy fraction) and a summary comparing the
// measured bubble and arenas with what the compiler predicted and planned.
// Optionally saves the first step's gradients, the final parameters and a
// Chrome trace of every action.
//
// Usage errors exit with 2, failures with 1; output files are only written
// after training succeeded, each atomically.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Checkpoint.h"
#include "gpipe/Runtime/Dataset.h"
#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/Engine.h"
#include "gpipe/Runtime/Metrics.h"
#include "gpipe/Runtime/MpiSession.h"
#include "gpipe/Runtime/Trace.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <new>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace gpipe::rt;

namespace {

const char *const kUsage =
    "usage: gpipe-run model.so [options]\n"
    "       gpipe-run model.so --predict --data X.safetensors\n"
    "                 [--params P.safetensors | --resume CKPT_DIR]\n"
    "                 [--save-outputs Y.safetensors]\n"
    "\n"
    "Trains a model compiled by gpipe-compile, one thread per pipeline rank;\n"
    "with --predict, runs a model compiled with gpipe-compile --inference\n"
    "over data.\n"
    "\n"
    "options:\n"
    "  --data FILE.safetensors  'input' [N, ...] and 'labels' [N, ...]; by\n"
    "                           default the model's built-in data. A\n"
    "                           model with several inputs reads each by\n"
    "                           its ONNX input name ('input_ids' [N, ...],\n"
    "                           'attention_mask' [N, ...], ...), or them\n"
    "                           packed as 'input' [N, S]\n"
    "  --save-outputs FILE      the outputs as one safetensors tensor,\n"
    "                           'output' [samples, ...]: the first step's\n"
    "                           logits (the loss's input) when training,\n"
    "                           every sample's with --predict\n"
    "\n"
    "inference (a library compiled with --inference):\n"
    "  --predict                run the forward over all of --data ('input'\n"
    "                           [N, ...], or each input by its name),\n"
    "                           batch by batch; a last batch of fewer\n"
    "                           than the model's batch is padded with\n"
    "                           the data's first samples and their outputs\n"
    "                           dropped, so the outputs are [N, ...]\n"
    "  --params FILE            the parameters, by name, from a training\n"
    "                           run's --save-params file (default: the\n"
    "                           model's initial values)\n"
    "  --resume CKPT_DIR        the parameters of a checkpoint: a step-*\n"
    "                           directory, or the newest complete one in\n"
    "                           a --checkpoint-dir\n"
    "\n"
    "training:\n"
    "  --steps N                train up to step N (default 10)\n"
    "  --epochs E               train E passes over the data instead: each\n"
    "                           floor(N / B) whole mini-batches (the last\n"
    "                           N mod B samples of an epoch left out)\n"
    "  --shuffle                each epoch takes the samples in a new order,\n"
    "                           drawn from --seed and the epoch\n"
    "  --optimizer NAME         sgd, momentum (or sgd-momentum) or adam (or\n"
    "                           adamw) (default: the one the model reserves\n"
    "                           state for)\n"
    "  --lr X                   learning rate (default 0.01, adam 0.001)\n"
    "  --momentum X             SGD momentum (default 0.9 for momentum)\n"
    "  --lr-schedule constant|linear|cosine|step\n"
    "                           the learning rate over the steps: after the\n"
    "                           warmup, constant (default), or decaying to\n"
    "                           --min-lr at --lr-decay-steps linearly, along\n"
    "                           a half cosine, or by --lr-gamma every\n"
    "                           --lr-step-size steps\n"
    "  --warmup-steps N         rise linearly to --lr over the first N steps\n"
    "                           (lr * s / (N + 1) at step s; default 0)\n"
    "  --min-lr X               where the decay ends (default 0)\n"
    "  --lr-decay-steps N       the step the decay ends at, warmup included\n"
    "                           (default: --steps)\n"
    "  --lr-step-size N         step: steps between decays (default: a\n"
    "                           third of the decay)\n"
    "  --lr-gamma X             step: the factor of each decay (default 0.1)\n"
    "  --metrics FILE.jsonl     one JSON object per step (step, loss, lr,\n"
    "                           grad norm, samples/s, busy per rank),\n"
    "                           appended to with --resume\n"
    "  --tensorboard DIR        the same scalars as TensorBoard event files\n"
    "  --plot FILE.svg          the loss and learning-rate curves\n"
    "  --eval-data FILE         evaluation samples (a safetensors file like\n"
    "                           --data, or `builtin`: 8 mini-batches of the\n"
    "                           built-in data training never draws) for a\n"
    "                           library compiled with gpipe-compile --eval:\n"
    "                           the loss (and the accuracy of a classifier)\n"
    "                           over all of them after the last step\n"
    "  --eval-every N           and after every N steps\n"
    "  --clip-grad-norm X       the bound of the global gradient norm, for a\n"
    "                           library compiled with gpipe-compile\n"
    "                           --clip-grad-norm (default: its bound)\n"
    "  --weight-decay X         default 0, adam (AdamW) 0.01\n"
    "  --seed S                 parameter and data seed (default 0)\n"
    "  --save-grads FILE        the first step's gradients (safetensors)\n"
    "  --save-params FILE       the parameters after the last step\n"
    "  --trace FILE.json        Chrome/Perfetto trace of every action,\n"
    "                           the compiler's predicted step beside them\n"
    "  --trace FILE.svg         a picture of the predicted step above the\n"
    "                           measured (median) one\n"
    "  --profile FILE.json      measure each layer's forward, backward and\n"
    "                           recompute, the transfers and the optimizer\n"
    "                           (medians over the steps after the first)\n"
    "                           for gpipe-compile --profile-file; merges\n"
    "                           into FILE's other micro-batch sizes\n"
    "  --kernel-times           where the compute time goes: the kernels'\n"
    "                           time per step by class (GEMM and its\n"
    "                           sgemm, elementwise, normalization and\n"
    "                           losses, data movement, optimizer), the\n"
    "                           rest, and the sgemm time by shape (cpu\n"
    "                           target; steps after the first 2)\n"
    "  --blas-threads N         threads per rank for OpenBLAS and the other\n"
    "                           CPU kernels (cpu target; default: the CPUs\n"
    "                           this process may use when it runs one rank,\n"
    "                           else 1; the same bits for every count)\n"
    "  --timeout SECONDS        give up on a silent peer (default 60)\n"
    "  --transport local|mpi|nccl\n"
    "                           rank threads in this process (default; on\n"
    "                           one GPU for --target cuda models), or one\n"
    "                           process per rank: mpirun -np K gpipe-run\n"
    "                           model.so --transport mpi (host messages) or\n"
    "                           nccl (GPU to GPU, one GPU per process)\n"
    "  --gpu N                  the GPU of a --target cuda model (default 0;\n"
    "                           under mpirun: the process's local rank)\n"
    "  --checkpoint-dir DIR     write checkpoints (parameters, optimizer\n"
    "                           state, step) there, atomically\n"
    "  --checkpoint-every N     every N steps and after the last (default 10)\n"
    "  --keep-checkpoints N     keep the newest N (default 3)\n"
    "  --resume                 continue from the newest complete checkpoint\n"
    "                           in --checkpoint-dir (any stage count); start\n"
    "                           fresh when it holds none\n"
    "  --on-nonfinite stop|skip a NaN or infinity in a loss, activation or\n"
    "                           gradient stops the run (default) or skips\n"
    "                           the step's updates\n"
    "  --inject-fault rank=R[,replica=D][,step=S][,action=A][,mode=M]\n"
    "                           rank R (of replica D) stops, stalls or is\n"
    "                           killed at action A of step S (tests)\n"
    "  --inject-nan rank=R,step=S[,mb=M]\n"
    "                           the activation rank R receives for\n"
    "                           micro-batch M gets a NaN (tests)\n"
    "  --emulate-device         run a --target cpu model the way a GPU run\n"
    "                           goes: separate arena memory reached by\n"
    "                           copies, checks answered when the step ends\n"
    "                           (tests)\n"
    "  --quiet                  print only the summary\n";

[[noreturn]] void usageError(const std::string &message) {
  std::fprintf(stderr, "gpipe-run: error: %s\n", message.c_str());
  std::fprintf(stderr, "run 'gpipe-run --help' for usage\n");
  std::exit(2);
}

/// Set once MPI is initialized (--transport mpi).
bool gMpi = false;

/// Reports `message` and ends the run; under MPI the whole job.
[[noreturn]] void fatal(const std::string &message) {
  if (gMpi) {
    std::fprintf(stderr, "gpipe-run: error: process %d: %s\n", mpiRank(),
                 message.c_str());
    abortMpiJob(message, /*announce=*/true);
  }
  std::fprintf(stderr, "gpipe-run: error: %s\n", message.c_str());
  std::exit(1);
}

std::string bytesString(int64_t bytes) {
  char buf[64];
  if (bytes >= (int64_t(1) << 40))
    std::snprintf(buf, sizeof buf, "%lld B (%.1f TiB)", (long long)bytes,
                  double(bytes) / double(int64_t(1) << 40));
  else if (bytes >= (int64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%lld B (%.1f GiB)", (long long)bytes,
                  double(bytes) / double(int64_t(1) << 30));
  else if (bytes >= (int64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%lld B (%.1f MiB)", (long long)bytes,
                  double(bytes) / double(1 << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%lld B (%.1f KiB)", (long long)bytes,
                  double(bytes) / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%lld B", (long long)bytes);
  return buf;
}

/// What the run is doing, for the out-of-memory message.
const char *volatile gDoing = "starting";

/// operator new failed: say so and end the run (no abort, no core dump).
/// Only what needs no memory: the handler may run on any rank's thread.
void outOfMemory() {
  std::fflush(stdout);
  std::fprintf(stderr,
               "gpipe-run: error: out of memory while %s; free "
               "memory, or compile a smaller plan (fewer or smaller "
               "micro-batches, remat)\n",
               gDoing);
  std::fflush(stderr);
  if (gMpi)
    abortMpiJob("out of memory", /*announce=*/true);
  std::_Exit(1);
}

/// Refuses a plan the machine cannot hold before allocating it: the
/// arenas of the ranks this process runs, each and together, against
/// physical memory. A CUDA model's arenas are on the GPU.
void checkArenasFit(const ModelMetadata &meta) {
  if (meta.target != "cpu")
    return;
  long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return;
  int64_t physical = int64_t(pages) * int64_t(pageSize);
  int64_t total = 0;
  for (const RankPlan &rank : meta.ranks) {
    if (rank.arenaBytes > physical)
      fatal("rank " + std::to_string(rank.rank) + "'s arena needs " +
            bytesString(rank.arenaBytes) + ", more than this machine's " +
            bytesString(physical) +
            " of memory; compile a smaller plan "
            "(a smaller batch, more micro-batches or stages, remat)");
    total = rank.arenaBytes > INT64_MAX - total ? INT64_MAX
                                                : total + rank.arenaBytes;
  }
  // Under MPI each process holds only its own ranks' arenas.
  if (!gMpi && total > physical)
    fatal("the " + std::to_string(meta.ranks.size()) + " ranks' arenas need " +
          bytesString(total) + " together, more than this machine's " +
          bytesString(physical) +
          " of memory; compile a smaller plan "
          "(a smaller batch, more micro-batches or stages, remat)");
}

double parseNumber(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || errno || !std::isfinite(v))
    usageError(flag + " expects a number, got '" + text + "'");
  return v;
}

int64_t parseInteger(const std::string &flag, const std::string &text,
                     int64_t min) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno)
    usageError(flag + " expects an integer, got '" + text + "'");
  if (v < min)
    usageError(flag + " must be at least " + std::to_string(min) + ", got " +
               text);
  return v;
}

/// Whether a new file can be created in directory `dir`: probed by
/// creating and removing one (permissions, read-only file systems and
/// full quotas all show). Empty when it can, else why not.
std::string probeWritable(const std::string &dir) {
  std::string probe = dir + "/.gpipe-run-probe-" + std::to_string(::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_not_of('/');
  slash =
      slash == std::string::npos ? std::string::npos : path.rfind('/', slash);
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Fails early when `path` could not be written (its directory missing,
/// not a directory or not writable, or the path a directory), so a long
/// run does not end in an unwritable output.
void checkOutputPath(const std::string &flag, const std::string &path) {
  std::string dir = parentOf(path);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    fatal(flag + " " + path + ": directory '" + dir + "' does not exist");
  if (!S_ISDIR(st.st_mode))
    fatal(flag + " " + path + ": '" + dir + "' is not a directory");
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    fatal(flag + " " + path + ": is a directory; give a file name");
  // A device or pipe (/dev/null) is written into, not replaced: it must
  // take writes, its directory need not take new files.
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (::access(path.c_str(), W_OK) != 0)
      fatal(flag + " " + path + ": cannot write: " + std::strerror(errno));
    return;
  }
  if (std::string why = probeWritable(dir); !why.empty())
    fatal(flag + " " + path + ": cannot create files in '" + dir + "': " + why);
}

/// The same for the checkpoint directory, created when the first
/// checkpoint is written: its nearest existing ancestor must be a
/// directory that takes new entries.
void checkCheckpointDir(const std::string &dir) {
  std::string existing = dir;
  struct stat st;
  while (::stat(existing.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      fatal("--checkpoint-dir " + dir + ": cannot use '" + existing +
            "': " + std::strerror(errno));
    std::string parent = parentOf(existing);
    if (parent == existing)
      break;
    existing = parent;
  }
  if (!S_ISDIR(st.st_mode))
    fatal("--checkpoint-dir " + dir + ": '" + existing +
          "' is not a directory");
  if (std::string why = probeWritable(existing); !why.empty())
    fatal("--checkpoint-dir " + dir + ": cannot create entries in '" +
          existing + "': " + why);
}

std::string numberOrNA(double v, const char *format = "%.3f") {
  if (std::isnan(v))
    return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

struct Args {
  std::string model;
  RunOptions run;
  std::string saveGrads, saveParams, trace, profile;
  std::string checkpointDir;
  int64_t checkpointEvery = 10;
  int64_t keepCheckpoints = 3;
  /// Which of --checkpoint-every / --keep-checkpoints were given (they mean
  /// nothing without --checkpoint-dir).
  std::string checkpointFlagGiven;
  bool resume = false;
  bool quiet = false;
  /// --gpu; -1: 0, or the local rank under mpirun.
  int gpu = -1;
  bool emulateDevice = false;
  bool kernelTimes = false;
  /// Inference: --predict, --params, and --resume's checkpoint directory.
  bool predict = false;
  std::string params, resumeDir;
  std::string saveOutputs;
  /// Whether --steps was given (it conflicts with --epochs).
  bool stepsGiven = false;
  /// --metrics FILE.jsonl, --tensorboard DIR, --plot FILE.svg.
  std::string metrics, tensorboard, plot;
  /// The training flags given (refused with --predict), in order.
  std::vector<std::string> trainingFlags;
};

/// --inject-nan rank=R,step=S[,mb=M].
NanInjection parseNanInjection(const std::string &flag,
                               const std::string &value) {
  NanInjection nan;
  bool haveRank = false;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    std::string item = value.substr(pos, comma - pos);
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    if (eq == std::string::npos ||
        (key != "rank" && key != "step" && key != "mb"))
      usageError("--inject-nan expects rank=R,step=S[,mb=M], got '" + value +
                 "'");
    int64_t number = parseInteger(flag, item.substr(eq + 1), 0);
    (key == "rank" ? nan.rank : key == "step" ? nan.step : nan.mb) = number;
    haveRank |= key == "rank";
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  if (!haveRank)
    usageError("--inject-nan: rank=R is required");
  return nan;
}

/// Sets the option `flag` (one that takes a value) to `value`, checked.
void setValuedFlag(Args &args, const std::string &flag,
                   const std::string &value) {
  RunOptions &run = args.run;
  if (flag == "--params") {
    args.params = value;
  } else if (flag == "--save-outputs") {
    args.saveOutputs = value;
  } else if (flag == "--data") {
    // Empty is not "the built-in data".
    if (value.empty())
      usageError("--data is empty; give a safetensors file, or leave the "
                 "option out for the model's built-in data");
    run.dataPath = value;
  } else if (flag == "--eval-data") {
    if (value.empty())
      usageError("--eval-data is empty; give a safetensors file of "
                 "evaluation samples");
    run.evalDataPath = value;
  } else if (flag == "--eval-every") {
    run.evalEvery = parseInteger(flag, value, 1);
  } else if (flag == "--steps") {
    run.steps = parseInteger(flag, value, 1);
    args.stepsGiven = true;
  } else if (flag == "--epochs") {
    run.epochs = parseInteger(flag, value, 1);
  } else if (flag == "--optimizer") {
    std::optional<OptimizerKind> kind = parseOptimizerKind(value);
    if (!kind)
      usageError("--optimizer: " + getUnknownOptimizerMessage(value));
    run.optimizer.kind = kind;
  } else if (flag == "--lr") {
    run.optimizer.lr = parseNumber(flag, value);
  } else if (flag == "--momentum") {
    run.optimizer.momentum = parseNumber(flag, value);
  } else if (flag == "--lr-schedule") {
    run.optimizer.schedule = parseLRScheduleKind(value);
    if (!run.optimizer.schedule)
      usageError("--lr-schedule must be constant, linear, cosine or step, "
                 "got '" +
                 value + "'");
  } else if (flag == "--warmup-steps") {
    run.optimizer.warmupSteps = parseInteger(flag, value, 0);
  } else if (flag == "--min-lr") {
    run.optimizer.minLr = parseNumber(flag, value);
  } else if (flag == "--lr-decay-steps") {
    run.optimizer.horizon = parseInteger(flag, value, 1);
  } else if (flag == "--lr-step-size") {
    run.optimizer.stepSize = parseInteger(flag, value, 1);
  } else if (flag == "--lr-gamma") {
    run.optimizer.gamma = parseNumber(flag, value);
  } else if (flag == "--clip-grad-norm") {
    run.optimizer.clipGradNorm = parseNumber(flag, value);
  } else if (flag == "--metrics") {
    args.metrics = value;
  } else if (flag == "--tensorboard") {
    args.tensorboard = value;
  } else if (flag == "--plot") {
    args.plot = value;
  } else if (flag == "--weight-decay") {
    run.optimizer.weightDecay = parseNumber(flag, value);
  } else if (flag == "--seed") {
    run.seed = uint64_t(parseInteger(flag, value, 0));
  } else if (flag == "--save-grads") {
    args.saveGrads = value;
  } else if (flag == "--save-params") {
    args.saveParams = value;
  } else if (flag == "--trace") {
    args.trace = value;
  } else if (flag == "--profile") {
    args.profile = value;
  } else if (flag == "--blas-threads") {
    run.blasThreads = parseInteger(flag, value, 1);
    if (run.blasThreads > 1024)
      usageError("--blas-threads must be at most 1024, got '" + value + "'");
  } else if (flag == "--timeout") {
    run.timeoutSeconds = parseNumber(flag, value);
    if (!(run.timeoutSeconds > 0))
      usageError("--timeout must be positive, got '" + value + "'");
    // Below this every wait gives up before a peer could answer, and the
    // run's failure would blame a stalled rank, not the timeout.
    if (run.timeoutSeconds < 0.01)
      usageError("--timeout " + value +
                 " s is below 0.01 s: waits would give up before a peer "
                 "could answer; give at least 0.01 (default 60)");
    if (run.timeoutSeconds > 1e6)
      usageError("--timeout must be at most 1000000 seconds, got '" + value +
                 "'");
  } else if (flag == "--checkpoint-dir") {
    if (value.empty())
      usageError("--checkpoint-dir is empty; give the directory to write "
                 "checkpoints to");
    args.checkpointDir = value;
  } else if (flag == "--checkpoint-every") {
    args.checkpointEvery = parseInteger(flag, value, 1);
    args.checkpointFlagGiven = flag;
  } else if (flag == "--keep-checkpoints") {
    args.keepCheckpoints = parseInteger(flag, value, 1);
    args.checkpointFlagGiven = flag;
  } else if (flag == "--transport") {
    if (value != "local" && value != "mpi" && value != "nccl")
      usageError("--transport must be local, mpi or nccl, got '" + value + "'");
    run.transport = value == "mpi"    ? TransportKind::Mpi
                    : value == "nccl" ? TransportKind::Nccl
                                      : TransportKind::Local;
  } else if (flag == "--gpu") {
    args.gpu = int(parseInteger(flag, value, 0));
  } else if (flag == "--on-nonfinite") {
    if (value != "stop" && value != "skip")
      usageError("--on-nonfinite must be stop or skip, got '" + value + "'");
    run.onNonFinite =
        value == "stop" ? NonFinitePolicy::Stop : NonFinitePolicy::Skip;
  } else if (flag == "--inject-nan") {
    run.injectNan = parseNanInjection(flag, value);
  } else if (flag == "--inject-fault") {
    FaultInjection fault;
    Status s = parseFaultInjection(value, fault);
    if (!s.ok())
      usageError("--inject-fault: " + s.message());
    run.fault = fault;
  }
}

/// The combinations of flags that are errors: a model is needed,
/// --predict takes no training flag and needs --data, checkpoints need a
/// directory.
void checkArgs(const Args &args) {
  if (args.model.empty())
    usageError("no model library given (gpipe-run model.so [options])");
  if (args.predict) {
    if (!args.trainingFlags.empty())
      usageError(args.trainingFlags.front() +
                 " is a training option; --predict runs the forward only");
    if (args.run.dataPath.empty())
      usageError("--predict needs --data (the samples to run the model on)");
    if (!args.params.empty() && args.resume)
      usageError("give the parameters once: --params or --resume, not both");
    return;
  }
  if (args.stepsGiven && args.run.epochs > 0)
    usageError("give the length of the run once: --steps or --epochs, not "
               "both");
  if (!args.params.empty())
    usageError("--params needs --predict (training starts from the model's "
               "initial values, or from a checkpoint with --resume)");
  if (args.resume && args.checkpointDir.empty())
    usageError("--resume needs --checkpoint-dir");
  if (!args.checkpointFlagGiven.empty() && args.checkpointDir.empty())
    usageError(args.checkpointFlagGiven +
               " needs --checkpoint-dir (where to write the checkpoints); "
               "without it nothing would be written");
}

Args parseArgs(int argc, char **argv) {
  Args args;
  for (int i = 1; i < argc; ++i)
    args.predict |= std::string(argv[i]) == "--predict";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      if (arg.size() > 1 && arg[0] == '-')
        usageError("unknown option '" + arg + "'");
      if (!args.model.empty())
        usageError("more than one model given ('" + args.model + "' and '" +
                   arg + "')");
      args.model = arg;
      continue;
    }
    std::string flag = arg, value;
    bool inlineValue = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    // With --predict, --resume names the checkpoint directory to read the
    // parameters from.
    if (flag == "--resume" && args.predict) {
      if (!inlineValue) {
        if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
          usageError("--resume with --predict needs the checkpoint "
                     "directory (--resume CKPT_DIR)");
        value = argv[++i];
      }
      if (value.empty())
        usageError("--resume is empty; give the checkpoint directory");
      args.resume = true;
      args.resumeDir = value;
      continue;
    }
    if (flag == "--quiet" || flag == "--resume" || flag == "--emulate-device" ||
        flag == "--predict" || flag == "--kernel-times" ||
        flag == "--shuffle") {
      if (inlineValue)
        usageError(flag + " takes no value");
      if (flag == "--resume" || flag == "--shuffle")
        args.trainingFlags.push_back(flag);
      (flag == "--quiet"          ? args.quiet
       : flag == "--resume"       ? args.resume
       : flag == "--predict"      ? args.predict
       : flag == "--kernel-times" ? args.kernelTimes
       : flag == "--shuffle"      ? args.run.shuffle
                                  : args.emulateDevice) = true;
      continue;
    }
    static const char *const kValued[] = {"--data",
                                          "--steps",
                                          "--epochs",
                                          "--optimizer",
                                          "--lr",
                                          "--momentum",
                                          "--weight-decay",
                                          "--lr-schedule",
                                          "--warmup-steps",
                                          "--min-lr",
                                          "--lr-decay-steps",
                                          "--lr-step-size",
                                          "--lr-gamma",
                                          "--clip-grad-norm",
                                          "--metrics",
                                          "--tensorboard",
                                          "--plot",
                                          "--eval-data",
                                          "--eval-every",
                                          "--seed",
                                          "--save-grads",
                                          "--save-params",
                                          "--trace",
                                          "--timeout",
                                          "--inject-fault",
                                          "--checkpoint-dir",
                                          "--checkpoint-every",
                                          "--keep-checkpoints",
                                          "--on-nonfinite",
                                          "--inject-nan",
                                          "--transport",
                                          "--gpu",
                                          "--params",
                                          "--save-outputs",
                                          "--profile",
                                          "--blas-threads"};
    bool known = false;
    for (const char *k : kValued)
      known |= flag == k;
    if (!known)
      usageError("unknown option '" + flag + "'");
    if (!inlineValue) {
      if (i + 1 >= argc)
        usageError(flag + " needs a value");
      value = argv[++i];
    }
    for (const char *training :
         {"--steps", "--epochs", "--optimizer", "--lr", "--momentum",
          "--weight-decay", "--lr-schedule", "--warmup-steps", "--min-lr",
          "--lr-decay-steps", "--lr-step-size", "--lr-gamma", "--save-grads",
          "--save-params", "--checkpoint-dir", "--checkpoint-every",
          "--keep-checkpoints", "--on-nonfinite", "--inject-nan"})
      if (flag == training)
        args.trainingFlags.push_back(flag);
    setValuedFlag(args, flag, value);
  }
  checkArgs(args);
  return args;
}

/// "rank 1", or "replica 1 rank 1" with data parallelism.
std::string workerLabel(const ModelMetadata &meta, int64_t worker) {
  int64_t k = meta.numRanks();
  std::string rank = "rank " + std::to_string(worker % k);
  return meta.dataParallel > 1
             ? "replica " + std::to_string(worker / k) + " " + rank
             : rank;
}

void printHeader(const ModelImage &image) {
  const ModelMetadata &m = image.metadata();
  std::printf("model: %s%s%s\n",
              m.source.empty() ? image.path().c_str() : m.source.c_str(),
              m.producer.empty() ? "" : ", compiled by ", m.producer.c_str());
  std::printf("pipeline: K=%lld stages on %lld ranks, M=%lld micro-batches "
              "of %lld (batch %lld), schedule %s%s%s%s\n",
              (long long)m.stages, (long long)m.numRanks(),
              (long long)m.microbatches, (long long)m.microBatchSize(),
              (long long)m.batchSize(),
              m.schedule.empty() ? "?" : m.schedule.c_str(),
              m.remat.empty() ? "" : ", remat ", m.remat.c_str(),
              m.precision == "bf16" ? ", bf16 GEMMs" : "");
  if (m.dataParallel > 1)
    std::printf("data parallel: D=%lld replicas of the pipeline (%lld "
                "workers), %lld samples each per step; gradients summed "
                "over the replicas before every update\n",
                (long long)m.dataParallel, (long long)m.numWorkers(),
                (long long)m.replicaBatchSize());
  for (const RankPlan &rank : m.ranks) {
    std::string stages;
    for (const StagePlan &s : rank.stages)
      stages += (stages.empty() ? "" : ",") + std::to_string(s.stage);
    std::printf("  rank %lld: stage%s %s, arena %s planned, %zu actions\n",
                (long long)rank.rank, rank.stages.size() == 1 ? "" : "s",
                stages.c_str(), bytesString(rank.arenaBytes).c_str(),
                rank.actions.size());
  }
}

/// The sgemm time of the steady-state steps by shape, slowest total first
/// (--kernel-times): what a faster GEMM would have to beat, shape by shape.
void printGemmShapes(const RunResult &result) {
  if (result.gemmShapes.empty() && !result.gemmShapesIncomplete)
    return;
  std::vector<gpipe_rt_gemm_shape_time> shapes = result.gemmShapes;
  std::sort(shapes.begin(), shapes.end(), [](const auto &a, const auto &b) {
    return a.nanoseconds > b.nanoseconds;
  });
  double steps = double(result.steadySteps);
  std::printf("  sgemm by shape (C = op(A) op(B), M x N x K, N: as stored, "
              "T: transposed; per step, all ranks):\n");
  const size_t shown = 12;
  double restMs = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const gpipe_rt_gemm_shape_time &g = shapes[i];
    double seconds = double(g.nanoseconds) * 1e-9;
    if (i >= shown) {
      restMs += seconds / steps * 1e3;
      continue;
    }
    double flops =
        2.0 * double(g.m) * double(g.n) * double(g.k) * double(g.calls);
    std::printf("    %lld x %lld x %lld %c%c: %.4g calls, %.3f ms, %.1f "
                "GFLOP/s\n",
                static_cast<long long>(g.m), static_cast<long long>(g.n),
                static_cast<long long>(g.k), g.trans_a ? 'T' : 'N',
                g.trans_b ? 'T' : 'N', double(g.calls) / steps,
                seconds / steps * 1e3,
                seconds > 0 ? flops / seconds * 1e-9 : 0.0);
  }
  if (shapes.size() > shown)
    std::printf("    %zu more shapes: %.3f ms\n", shapes.size() - shown,
                restMs);
  if (result.gemmShapesIncomplete)
    std::printf("    (a rank ran more than %d shapes in a step: the rest "
                "are counted in the totals above only)\n",
                GPIPE_RT_GEMM_SHAPES);
}

/// Where the compute time of the steady-state steps went (--kernel-times):
/// per step, summed over this process's ranks.
void printKernelTimes(const RunResult &result) {
  if (result.steadySteps < 1 || result.kernelSeconds.empty()) {
    std::printf("kernel time: not measured (the steps after the first 2 are "
                "timed: train 3 or more)\n");
    return;
  }
  double steps = double(result.steadySteps);
  double busy = result.steadyBusySeconds / steps;
  auto ms = [&](double seconds) { return seconds / steps * 1e3; };
  auto share = [&](double seconds) {
    return busy > 0 ? 100.0 * seconds / steps / busy : 0.0;
  };
  const std::vector<double> &k = result.kernelSeconds;
  double kernels = 0;
  for (size_t c = 0; c < k.size(); ++c)
    if (c != GPIPE_RT_KERNEL_CLASS_SGEMM)
      kernels += k[c];
  double outside = std::max(0.0, result.steadyBusySeconds - kernels);
  std::printf("kernel time per step (ms, all ranks, %lld steps after the "
              "first 2): busy %.3f\n",
              static_cast<long long>(result.steadySteps), busy * 1e3);
  std::printf(
      "  GEMM %.3f (%.1f%%; inside sgemm %.3f), elementwise %.3f "
      "(%.1f%%), normalization and losses %.3f (%.1f%%), data "
      "movement %.3f (%.1f%%), optimizer %.3f (%.1f%%), outside "
      "kernels %.3f (%.1f%%: the library's own code, runtime "
      "calls, optimizer steps)\n",
      ms(k[GPIPE_RT_KERNEL_CLASS_GEMM]), share(k[GPIPE_RT_KERNEL_CLASS_GEMM]),
      ms(k[GPIPE_RT_KERNEL_CLASS_SGEMM]),
      ms(k[GPIPE_RT_KERNEL_CLASS_ELEMENTWISE]),
      share(k[GPIPE_RT_KERNEL_CLASS_ELEMENTWISE]),
      ms(k[GPIPE_RT_KERNEL_CLASS_NORMALIZATION]),
      share(k[GPIPE_RT_KERNEL_CLASS_NORMALIZATION]),
      ms(k[GPIPE_RT_KERNEL_CLASS_MOVEMENT]),
      share(k[GPIPE_RT_KERNEL_CLASS_MOVEMENT]),
      ms(k[GPIPE_RT_KERNEL_CLASS_OPTIMIZER]),
      share(k[GPIPE_RT_KERNEL_CLASS_OPTIMIZER]), ms(outside), share(outside));
  printGemmShapes(result);
}

/// The device the run computes on: the GPU asked for, or under mpirun the
/// process's local rank's (one GPU per process on each node), or the host.
void setUpDevice(const Args &args, const ModelMetadata &meta, RunOptions &run) {
  int gpu = args.gpu;
  if (gpu < 0) {
    gpu = 0;
    if (gMpi)
      if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"))
        gpu = std::atoi(local);
  }
  if (run.transport == TransportKind::Nccl && meta.target == "cpu")
    fatal("--transport nccl moves GPU buffers, for --target cuda models; "
          "this one runs on the CPU: use --transport mpi");
  if (args.gpu >= 0 && meta.target == "cpu")
    fatal("--gpu " + std::to_string(args.gpu) +
          " is for --target cuda "
          "models; this one runs on the CPU");
  if (args.emulateDevice) {
    if (meta.target != "cpu")
      fatal("--emulate-device runs --target cpu models; this one is "
            "compiled for --target " +
            meta.target);
    run.device = makeEmulatedDevice();
  } else {
    Status s = makeDevice(meta.target, gpu, run.device);
    if (!s.ok())
      fatal(s.message());
  }
}

/// Under MPI every process must run the same model: a hash of what
/// identifies it, compared across processes.
void checkSameModelOnEveryProcess(const ModelMetadata &meta,
                                  const RunOptions &run) {
  std::string model = meta.source + "|" + std::to_string(meta.stages) + "|" +
                      std::to_string(meta.microbatches);
  for (const RankPlan &rank : meta.ranks)
    model += "|" + std::to_string(rank.arenaBytes);
  for (const ParameterSpec &p : meta.parameters)
    model += "|" + p.name;
  char hash[32];
  std::snprintf(
      hash, sizeof hash, "%016llx",
      (unsigned long long)gpipe_rt_hash_name(model.data(), model.size()));
  Status s = checkSameOnEveryProcess(meta.source + " (" + hash + ")",
                                     "the model", run.timeoutSeconds);
  if (!s.ok())
    fatal(s.message());
}

/// Inference (--predict with --params or --resume): the parameters of a
/// training run, by name, from --params or the newest checkpoint of
/// --resume, into `loaded`.
void loadPredictParameters(const Args &args, const ModelMetadata &meta,
                           RunOptions &run, TrainingState &loaded, bool root) {
  if (args.predict && (!args.params.empty() || args.resume)) {
    std::string from = args.params;
    Status s = Status::success();
    if (!args.params.empty()) {
      s = readParameterTensors(args.params, meta, loaded.parameters);
    } else {
      struct stat st;
      std::string manifest = args.resumeDir + "/MANIFEST.json";
      TrainingState state;
      if (::stat(manifest.c_str(), &st) == 0) {
        s = readCheckpoint(args.resumeDir, meta, "", state);
        from = args.resumeDir;
        if (!s.ok())
          s = Status::error("checkpoint " + args.resumeDir + ": " +
                            s.message());
      } else {
        std::vector<std::string> skipped;
        s = findLatestCheckpoint(args.resumeDir, meta, "", from, state,
                                 &skipped);
        for (const std::string &why : skipped)
          std::fprintf(stderr, "gpipe-run: warning: skipping checkpoint %s\n",
                       why.c_str());
      }
      loaded.parameters = std::move(state.parameters);
    }
    if (!s.ok())
      fatal(s.message());
    // Parameters only: the step, the optimizer and its state stay behind.
    loaded.step = 0;
    loaded.seed = run.seed;
    loaded.optimizer = getOptimizerName(OptimizerKind::SGD);
    loaded.source = meta.source;
    run.resume = &loaded;
    if (!args.quiet && root)
      std::printf("parameters: %s\n", from.c_str());
  }
}

/// Whether `dir` holds checkpoints (step-* entries).
bool holdsCheckpoints(const std::string &dir) {
  bool found = false;
  if (!dir.empty())
    if (DIR *d = opendir(dir.c_str())) {
      while (dirent *e = readdir(d))
        found |= std::string(e->d_name).rfind("step-", 0) == 0;
      closedir(d);
    }
  return found;
}

/// Training with --resume: the newest complete checkpoint of
/// --checkpoint-dir, the same on every process, into `resumed` (and the
/// run's seed). False when it is already at --steps: nothing is left to
/// train.
bool resumeFromCheckpoints(const Args &args, const ModelMetadata &meta,
                           RunOptions &run, bool haveCheckpoints,
                           TrainingState &resumed, bool root) {
  if (args.resume && !args.predict) {
    OptimizerConfig config;
    Status s =
        resolveOptimizer(meta, run.optimizer, run.steps, config, args.model);
    if (!s.ok())
      fatal(s.message());
    std::string kind = getOptimizerName(config.stateKind());
    std::string path;
    std::vector<std::string> skipped;
    std::string chosen = "none";
    if (haveCheckpoints) {
      s = findLatestCheckpoint(args.checkpointDir, meta, kind, path, resumed,
                               &skipped);
      for (const std::string &why : skipped)
        std::fprintf(stderr, "gpipe-run: warning: skipping checkpoint %s\n",
                     why.c_str());
      if (!s.ok())
        fatal(s.message());
      // What the checkpoint holds, for comparing across MPI processes.
      uint64_t hash = 0;
      for (const auto &[name, values] : resumed.parameters)
        hash ^=
            gpipe_rt_hash_name(reinterpret_cast<const char *>(values.data()),
                               values.size() * 4) +
            gpipe_rt_hash_name(name.data(), name.size());
      char text[64];
      std::snprintf(text, sizeof text, "step %lld, contents %016llx",
                    (long long)resumed.step, (unsigned long long)hash);
      chosen = text;
    }
    // Every process must resume from the same state (node-local disks or
    // stale network file system caches can show them different ones).
    s = checkSameOnEveryProcess(chosen, "the checkpoint to resume from",
                                run.timeoutSeconds);
    if (!s.ok())
      fatal(s.message());
    if (!haveCheckpoints) {
      if (root)
        std::printf("resume: no checkpoint in %s yet; starting at step 1\n",
                    args.checkpointDir.c_str());
    } else {
      if (resumed.seed != run.seed && root)
        std::printf("resume: using the checkpoint's seed %llu\n",
                    (unsigned long long)resumed.seed);
      run.seed = resumed.seed;
      if (resumed.unverifiedManifest && root)
        std::fprintf(stderr,
                     "gpipe-run: warning: %s/MANIFEST.json has no checksum "
                     "of its own (written by an older gpipe-run); its step, "
                     "seed and optimizer step count are taken unverified\n",
                     path.c_str());
      if (root)
        std::printf("resume: %s (step %lld)\n", path.c_str(),
                    (long long)resumed.step);
      if (resumed.step >= run.steps) {
        if (root)
          std::printf("nothing to do: the checkpoint is at step %lld, "
                      "--steps is %lld\n",
                      (long long)resumed.step, (long long)run.steps);
        if (!args.saveParams.empty() && root) {
          s = writeParameterTensors(args.saveParams, meta, resumed.parameters,
                                    {{"contents", "parameters"},
                                     {"step", std::to_string(resumed.step)}});
          if (!s.ok())
            fatal(s.message());
          std::printf("wrote the parameters of step %lld to %s\n",
                      (long long)resumed.step, args.saveParams.c_str());
        }
        return false;
      }
      run.resume = &resumed;
    }
  }
  return true;
}

/// --checkpoint-dir: how often, and the writer the engine calls.
void installCheckpointWriter(const Args &args, const ModelMetadata &meta,
                             RunOptions &run) {
  run.checkpointEvery = args.checkpointEvery;
  run.checkpoint = [&args, &meta](const TrainingState &state) -> Status {
    std::string path;
    std::vector<std::string> warnings;
    Status w = writeCheckpoint(args.checkpointDir, state, meta,
                               int(args.keepCheckpoints), &path, &warnings);
    if (w.ok() && !args.quiet)
      std::printf("checkpoint: %s\n", path.c_str());
    std::fflush(stdout);
    for (const std::string &warning : warnings)
      std::fprintf(stderr, "gpipe-run: warning: %s\n", warning.c_str());
    return w;
  };
}

/// An injection outside what runs would inject nothing and pass silently.
void checkNanInjection(const ModelMetadata &meta, const RunOptions &run) {
  if (!run.injectNan)
    return;
  int64_t numRanks = meta.numRanks();
  const NanInjection &nan = *run.injectNan;
  int64_t firstStep = run.resume ? run.resume->step + 1 : 1;
  if (nan.rank < 0 || nan.rank >= numRanks)
    fatal("--inject-nan: rank " + std::to_string(nan.rank) +
          " is not a rank of this model (it has ranks 0 to " +
          std::to_string(numRanks - 1) + ")");
  if (nan.step < firstStep || nan.step > run.steps)
    fatal("--inject-nan: step " + std::to_string(nan.step) +
          " is not a step this run trains (steps " + std::to_string(firstStep) +
          " to " + std::to_string(run.steps) + ")");
  if (nan.mb < 0 || nan.mb >= meta.microbatches)
    fatal("--inject-nan: micro-batch " + std::to_string(nan.mb) +
          " is outside [0, " + std::to_string(meta.microbatches) + ")");
}

/// "epochs: 3 of 15 steps (240 samples each, the last 16 of each epoch left
/// out), shuffled by seed 0".
void printEpochs(const RunOptions &run, const ModelMetadata &meta,
                 const Dataset &data) {
  if (run.epochs == 0 && !run.shuffle)
    return;
  int64_t b = meta.batchSize(), n = data.numSamples();
  int64_t perEpoch = n / b, left = n % b;
  if (run.epochs > 0)
    std::printf("epochs: %lld of %lld steps", (long long)run.epochs,
                (long long)perEpoch);
  else
    std::printf("epochs of %lld steps", (long long)perEpoch);
  std::printf(" (%lld samples each", (long long)(perEpoch * b));
  if (left)
    std::printf(", the last %lld of each epoch's order left out",
                (long long)left);
  std::printf(")");
  if (run.shuffle)
    std::printf(", shuffled by seed %llu", (unsigned long long)run.seed);
  std::printf("\n");
}

/// ", warmup 10 steps, cosine to 1e-05 at step 100".
void printSchedule(const LRSchedule &schedule) {
  if (schedule.warmupSteps > 0)
    std::printf(", warmup %lld steps", (long long)schedule.warmupSteps);
  switch (schedule.kind) {
  case LRScheduleKind::Constant:
    return;
  case LRScheduleKind::Linear:
  case LRScheduleKind::Cosine:
    std::printf(", %s to %g at step %lld", getLRScheduleName(schedule.kind),
                schedule.minLr, (long long)schedule.horizon);
    return;
  case LRScheduleKind::Step:
    std::printf(", x%g every %lld steps (at least %g)", schedule.gamma,
                (long long)schedule.stepSize, schedule.minLr);
    return;
  }
}

/// The one-line progress display on a terminal: step/total, epoch, loss,
/// lr, samples/s and the time left, rewritten in place after every step.
struct ProgressLine {
  int64_t total = 0, stepsPerEpoch = 0, epochs = 0;
  bool shown = false;
  /// The last steps' seconds, for the time left.
  std::vector<double> recent;

  void show(const StepMetrics &m) {
    if (m.step > 1 || recent.empty())
      recent.push_back(m.seconds);
    if (recent.size() > 20)
      recent.erase(recent.begin());
    double mean = 0;
    for (double r : recent)
      mean += r / double(recent.size());
    double left = mean * double(std::max<int64_t>(total - m.step, 0));
    std::printf("\rstep %lld/%lld", (long long)m.step, (long long)total);
    if (m.epoch > 0 && epochs > 0)
      std::printf("  epoch %lld/%lld", (long long)m.epoch, (long long)epochs);
    else if (m.epoch > 0)
      std::printf("  epoch %lld", (long long)m.epoch);
    std::printf("  loss %.6f  lr %.4g", m.loss, m.lr);
    if (!std::isnan(m.gradNorm))
      std::printf("  grad norm %.4g", m.gradNorm);
    long long secs = std::llround(left);
    std::printf("  %.1f samples/s  ETA %lld:%02lld:%02lld\x1b[K",
                m.samplesPerSecond, secs / 3600, secs / 60 % 60, secs % 60);
    std::fflush(stdout);
    shown = true;
  }
  /// Ends the line before anything else is printed.
  void finish() {
    if (shown)
      std::printf("\n");
    shown = false;
  }
};

/// Set when training shows a progress line (stdout a terminal).
ProgressLine *gProgress = nullptr;

/// What the run prints as it goes (the optimizer and the data, a line per
/// step), and how a stuck rank thread ends the process.
void installProgressCallbacks(const Args &args, const ModelMetadata &meta,
                              RunOptions &run, bool root) {
  run.onStart = [&args, &meta](const OptimizerConfig &opt,
                               const Dataset &data) {
    if (args.quiet)
      return;
    std::printf("data: %s\n", data.describe().c_str());
    if (args.predict) {
      int64_t n = data.numSamples(), b = meta.batchSize();
      int64_t padding = (b - n % b) % b;
      std::printf("predict: %lld samples in %lld batches of %lld", (long long)n,
                  (long long)((n + b - 1) / b), (long long)b);
      if (padding)
        std::printf(" (the last padded with %lld of the first samples, "
                    "their outputs dropped)",
                    (long long)padding);
      std::printf("\n%6s %12s %12s  busy per rank\n", "batch", "", "samples/s");
      std::fflush(stdout);
      return;
    }
    printEpochs(args.run, meta, data);
    std::printf("optimizer: %s, lr %g", getOptimizerName(opt.kind), opt.lr);
    if (opt.kind == OptimizerKind::Momentum)
      std::printf(", momentum %g", opt.momentum);
    if (opt.weightDecay != 0.0)
      std::printf(", weight decay %g", opt.weightDecay);
    printSchedule(opt.schedule);
    if (opt.clipGradNorm > 0)
      std::printf(", gradients clipped to norm %g", opt.clipGradNorm);
    if (gProgress) {
      std::printf("\n");
      std::fflush(stdout);
      return;
    }
    std::printf("\n%6s %12s %12s ", "step", "loss", "lr");
    if (meta.clipsGradients())
      std::printf("%12s ", "grad norm");
    std::printf("%12s  busy per rank\n", "samples/s");
    std::fflush(stdout);
  };
  // A terminal gets one line rewritten in place; a pipe or file a line per
  // step. Under mpirun process 0's stdout is a pseudo-terminal whatever
  // mpirun's own output is: lines there.
  static ProgressLine progress;
  if (root && !args.quiet && !args.predict && !gMpi &&
      ::isatty(STDOUT_FILENO)) {
    progress.total = run.steps;
    progress.epochs = run.epochs;
    gProgress = &progress;
  }
  run.onStep = [&args, root,
                clips = meta.clipsGradients()](const StepMetrics &m) {
    if (args.quiet || !root)
      return;
    if (gProgress && !args.predict) {
      gProgress->show(m);
      return;
    }
    if (args.predict)
      std::printf("%6lld %12s %12.1f ", (long long)m.step, "",
                  m.samplesPerSecond);
    else if (!clips)
      std::printf("%6lld %12.6f %12.4g %12.1f ", (long long)m.step, m.loss,
                  m.lr, m.samplesPerSecond);
    else
      std::printf("%6lld %12.6f %12.4g %12.4g %12.1f ", (long long)m.step,
                  m.loss, m.lr, m.gradNorm, m.samplesPerSecond);
    for (double busy : m.busyFraction)
      std::printf(" %.2f", busy);
    std::printf("\n");
    std::fflush(stdout);
  };

  // A rank thread that cannot be joined (stuck in a library call) ends the
  // process: no exit handlers, which could wait for it too.
  run.onStuck = [](const std::string &message) {
    std::fflush(stdout);
    if (gMpi)
      std::fprintf(stderr, "gpipe-run: error: process %d: %s\n", mpiRank(),
                   message.c_str());
    else
      std::fprintf(stderr, "gpipe-run: error: %s\n", message.c_str());
    std::fflush(stderr);
    if (gMpi)
      abortMpiJob(message, /*announce=*/true);
    std::_Exit(1);
  };
}

/// The metrics files of a run (process 0's): opened before the first step,
/// written after each.
struct MetricsOutputs {
  std::unique_ptr<JsonLinesWriter> jsonLines;
  std::unique_ptr<TensorBoardWriter> tensorBoard;
  /// For --plot.
  std::vector<MetricsRecord> records;
  bool warned = false;
};

/// A step's scalars for the metrics files.
MetricsRecord toRecord(const StepMetrics &m, bool clips) {
  MetricsRecord record;
  record.step = m.step;
  record.epoch = m.epoch;
  record.scalars.push_back({"loss", m.loss});
  record.scalars.push_back({"lr", m.lr});
  if (clips)
    record.scalars.push_back({"grad_norm", m.gradNorm});
  record.scalars.push_back({"samples_per_second", m.samplesPerSecond});
  record.scalars.push_back({"seconds", m.seconds});
  record.busy = m.busyFraction;
  record.wallTime = std::chrono::duration<double>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  return record;
}

/// Opens --metrics and --tensorboard (an unwritable path ends the run
/// before any step) and adds their writing to the step callback. A failed
/// write later warns once and training goes on.
void installMetricsWriters(const Args &args, const ModelMetadata &meta,
                           RunOptions &run, bool root,
                           MetricsOutputs &outputs) {
  if (!root ||
      (args.metrics.empty() && args.tensorboard.empty() && args.plot.empty()))
    return;
  if (!args.metrics.empty()) {
    checkOutputPath("--metrics", args.metrics);
    Status s =
        JsonLinesWriter::open(args.metrics, args.resume, outputs.jsonLines);
    if (!s.ok())
      fatal(s.message());
  }
  if (!args.tensorboard.empty()) {
    Status s = TensorBoardWriter::open(args.tensorboard, outputs.tensorBoard);
    if (!s.ok())
      fatal(s.message());
  }
  run.onStep = [previous = run.onStep, &outputs,
                clips = meta.clipsGradients()](const StepMetrics &m) {
    if (previous)
      previous(m);
    MetricsRecord record = toRecord(m, clips);
    for (Status s : {outputs.jsonLines ? outputs.jsonLines->write(record)
                                       : Status::success(),
                     outputs.tensorBoard ? outputs.tensorBoard->write(record)
                                         : Status::success()})
      if (!s.ok() && !outputs.warned) {
        std::fprintf(stderr, "gpipe-run: warning: %s; training goes on\n",
                     s.message().c_str());
        outputs.warned = true;
      }
    outputs.records.push_back(std::move(record));
  };
}

/// The evaluations: a line each, and their scalars in the metrics files.
void installEvalReports(const Args &args, RunOptions &run, bool root,
                        MetricsOutputs &outputs) {
  if (!root)
    return;
  run.onEval = [&args, &outputs](const EvalMetrics &m) {
    if (!args.quiet) {
      if (gProgress)
        gProgress->finish();
      if (std::isnan(m.accuracy))
        std::printf("eval after step %lld: loss %.6f over %lld samples "
                    "(%.2f s)\n",
                    (long long)m.step, m.loss, (long long)m.samples, m.seconds);
      else
        std::printf("eval after step %lld: loss %.6f, accuracy %.2f%% over "
                    "%lld samples (%.2f s)\n",
                    (long long)m.step, m.loss, 100.0 * m.accuracy,
                    (long long)m.samples, m.seconds);
      std::fflush(stdout);
    }
    MetricsRecord record;
    record.step = m.step;
    record.scalars.push_back({"eval_loss", m.loss});
    if (!std::isnan(m.accuracy))
      record.scalars.push_back({"eval_accuracy", m.accuracy});
    record.wallTime = std::chrono::duration<double>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
    for (Status s : {outputs.jsonLines ? outputs.jsonLines->write(record)
                                       : Status::success(),
                     outputs.tensorBoard ? outputs.tensorBoard->write(record)
                                         : Status::success()})
      if (!s.ok() && !outputs.warned) {
        std::fprintf(stderr, "gpipe-run: warning: %s; training goes on\n",
                     s.message().c_str());
        outputs.warned = true;
      }
    outputs.records.push_back(std::move(record));
  };
}

/// --plot: the curves of the steps this run trained.
void writeCurves(const Args &args, const ModelMetadata &meta,
                 const MetricsOutputs &outputs) {
  if (args.plot.empty())
    return;
  std::vector<std::string> curves = {"loss"};
  if (!args.run.evalDataPath.empty())
    curves.push_back("eval_loss");
  if (meta.clipsGradients())
    curves.push_back("grad_norm");
  std::string title =
      (meta.source.empty() ? args.model : meta.source) + ": training curves";
  Status s = writeCurvesSvg(args.plot, title, outputs.records, curves);
  if (!s.ok())
    fatal(s.message());
  std::printf("wrote the training curves to %s\n", args.plot.c_str());
}

/// The engine's error, the flight recorder's last events and, under MPI,
/// the job's end.
void reportRunFailure(const Status &s, const RunResult &result) {
  if (gProgress)
    gProgress->finish();
  std::fflush(stdout);
  if (gMpi)
    std::fprintf(stderr, "gpipe-run: error: process %d: %s\n", mpiRank(),
                 s.message().c_str());
  else
    std::fprintf(stderr, "gpipe-run: error: %s\n", s.message().c_str());
  for (const std::string &line : result.flightRecorder)
    std::fprintf(stderr, "  %s\n", line.c_str());
  std::fflush(stderr);
  if (gMpi)
    abortMpiJob(s.message(), /*announce=*/!isRemoteFailure(s.message()));
}

/// The run's summary: skipped steps, the loss or the predictions, the
/// measured bubble and step time next to the predicted ones, busy time per
/// rank, BLAS threads and kernel times.
void printRunSummary(const Args &args, const ModelMetadata &meta,
                     const RunResult &result) {
  for (const std::string &line : result.skippedSteps)
    std::fprintf(stderr, "gpipe-run: warning: %s\n", line.c_str());
  // Skipping a bad step is a recovery; skipping every step trained nothing.
  if (!result.steps.empty() &&
      result.skippedSteps.size() >= result.steps.size())
    fatal("every one of the " + std::to_string(result.steps.size()) +
          " steps had a NaN or infinity and skipped its updates: nothing was "
          "trained; run with --on-nonfinite stop to see where it first "
          "appears");

  const StepMetrics &first = result.steps.front(), &last = result.steps.back();
  if (args.predict)
    std::printf("predicted %lld samples in %lld batches (%.3f s)\n",
                (long long)result.outputSamples, (long long)result.steps.size(),
                result.totalSeconds);
  else
    std::printf("loss: %.6f -> %.6f over %lld steps (%.3f s)\n", first.loss,
                last.loss, (long long)result.steps.size(), result.totalSeconds);
  // The schedule's own closed form; a model without the key is older and
  // has only GPipe's (K-1)/(M+K-1), said as such.
  std::string closedForm;
  if (!meta.predictedScheduleClosedFormBubble)
    closedForm = "closed form " + numberOrNA(meta.predictedClosedFormBubble) +
                 " (gpipe, (K-1)/(M+K-1))";
  else if (std::isnan(*meta.predictedScheduleClosedFormBubble))
    closedForm = "no closed form (" + meta.schedule + ")";
  else
    closedForm = "closed form " +
                 numberOrNA(*meta.predictedScheduleClosedFormBubble) + " (" +
                 meta.schedule + ")";
  std::printf("bubble: measured %.3f, predicted %s, %s\n",
              result.measuredBubble, numberOrNA(meta.predictedBubble).c_str(),
              closedForm.c_str());
  if (!std::isnan(meta.predictedStepSeconds) && !result.steps.empty()) {
    // The steady state: the median of the steps after the first (which
    // also touches every page and warms the caches).
    std::vector<double> seconds;
    for (const StepMetrics &m : result.steps)
      seconds.push_back(m.seconds);
    if (seconds.size() > 1)
      seconds.erase(seconds.begin());
    std::sort(seconds.begin(), seconds.end());
    size_t n = seconds.size();
    double median =
        n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
    std::printf("step time: measured %.6f s (median%s), predicted %.6f s "
                "(%+.1f%%)\n",
                median, result.steps.size() > 1 ? " after the first" : "",
                meta.predictedStepSeconds,
                100.0 * (meta.predictedStepSeconds / median - 1.0));
  }
  // Per rank, the compute time of a step: what the cost model predicted
  // next to what ran (the same steps as the measured bubble).
  if (!meta.predictedBusySeconds.empty()) {
    std::printf("busy per step (ms): ");
    for (size_t w = 0; w < result.busySeconds.size(); ++w) {
      size_t r = w % meta.predictedBusySeconds.size();
      std::printf("%s%s measured %.3f, predicted %.3f", w ? "; " : "",
                  workerLabel(meta, int64_t(w)).c_str(),
                  result.busySeconds[w] * 1e3,
                  meta.predictedBusySeconds[r] * 1e3);
    }
    std::printf("\n");
  }
  if (result.blasThreads > 0)
    std::printf(
        "BLAS: %lld thread%s per rank (%s)\n", (long long)result.blasThreads,
        result.blasThreads == 1 ? "" : "s", result.blasThreadsReason.c_str());
  if (!result.gemm.empty())
    std::printf("GEMMs: %s\n", result.gemm.c_str());
  if (args.kernelTimes)
    printKernelTimes(result);
}

/// Memory: each arena against its plan, the process's peak against the
/// arenas, heap allocations in steady steps; a fatal error where an arena
/// differs from its plan.
void printMemoryReport(const ModelMetadata &meta, const RunResult &result) {
  for (const ArenaReport &a : result.arenas)
    std::printf("arena %s: measured %s, planned %s: %s\n",
                workerLabel(meta, a.rank).c_str(),
                bytesString(a.measuredBytes).c_str(),
                bytesString(a.plannedBytes).c_str(),
                a.measuredBytes == a.plannedBytes ? "equal" : "DIFFERENT");
  // What the process held at its peak next to what the plan covers: the
  // arenas are the training state; the rest does not grow with the plan.
  {
    struct rusage usage;
    int64_t planned = 0;
    // Under MPI this process holds only its own rank's arena.
    for (const ArenaReport &a : result.arenas)
      if (!gMpi || a.rank == mpiRank())
        planned += a.plannedBytes;
    if (::getrusage(RUSAGE_SELF, &usage) == 0) {
      int64_t peak = int64_t(usage.ru_maxrss) * 1024; // KiB on Linux
      bool onHost = meta.target == "cpu";
      std::printf("memory: peak resident %s (getrusage ru_maxrss%s), the "
                  "plan's arenas %s%s\n",
                  bytesString(peak).c_str(), gMpi ? ", process 0" : "",
                  bytesString(planned).c_str(), onHost ? "" : " on the GPU");
      std::printf(
          "  %s%s: code and libraries (OpenBLAS, Open MPI%s), the "
          "model library, the training data, host copies of the "
          "parameters and optimizer state (outputs, checkpoints), "
          "thread stacks, the allocator's free memory\n",
          onHost ? "fixed overhead, the other " : "all host memory, ",
          onHost ? bytesString(std::max<int64_t>(0, peak - planned)).c_str()
                 : bytesString(peak).c_str(),
          onHost ? "" : ", CUDA");
    }
  }
  if (result.steadySteps > 0 && result.steadyHeapAllocations < 0)
    std::printf("heap allocations on rank threads in steady-state steps: not "
                "counted (a sanitizer build keeps its own allocator)\n");
  else if (result.steadySteps > 0)
    std::printf("heap allocations on rank threads in steady-state steps "
                "(after the first 2): %lld in %lld steps\n",
                static_cast<long long>(result.steadyHeapAllocations),
                static_cast<long long>(result.steadySteps));
  // The plan is exact: a rank that touched more or fewer bytes than it
  // reserved means the compiler and the runtime disagree about the layout.
  for (const ArenaReport &a : result.arenas)
    if (a.measuredBytes != a.plannedBytes)
      fatal(workerLabel(meta, a.rank) + " touched " +
            std::to_string(a.measuredBytes) +
            " bytes of its arena but the "
            "memory plan reserved " +
            std::to_string(a.plannedBytes) +
            " (a compiler bug: please report it with the model)");
}

/// The files asked for: first gradients, final parameters, outputs, the
/// trace and the measured profile.
void writeRunOutputs(const Args &args, const ModelMetadata &meta,
                     const RunResult &result, bool root) {
  Status s = Status::success();
  if (!args.saveGrads.empty()) {
    // The loss of the step the gradients belong to, for checks against a
    // reference (full precision).
    char loss[32];
    std::snprintf(loss, sizeof loss, "%.9g",
                  result.steps.empty() ? 0.0 : result.steps.front().loss);
    s = writeParameterTensors(
        args.saveGrads, meta, result.firstGradients,
        {{"contents", "gradients"},
         {"step", std::to_string(result.steps.front().step)},
         {"loss", loss}});
    if (!s.ok())
      fatal(s.message());
    std::printf("wrote the first step's gradients to %s\n",
                args.saveGrads.c_str());
  }
  if (!args.saveParams.empty()) {
    s = writeParameterTensors(
        args.saveParams, meta, result.finalParameters,
        {{"contents", "parameters"},
         {"step", std::to_string(result.steps.back().step)}});
    if (!s.ok())
      fatal(s.message());
    std::printf("wrote the final parameters to %s\n", args.saveParams.c_str());
  }
  if (!args.saveOutputs.empty()) {
    s = writeOutputTensor(args.saveOutputs, meta, result,
                          {{"mode", args.predict ? "inference" : "train"}});
    if (!s.ok())
      fatal(s.message());
    std::printf("wrote the %s to %s\n",
                args.predict ? "outputs" : "first step's outputs (logits)",
                args.saveOutputs.c_str());
  }
  if (!args.trace.empty()) {
    bool svg = args.trace.size() >= 4 &&
               args.trace.compare(args.trace.size() - 4, 4, ".svg") == 0;
    s = svg ? writeTimelineSVG(args.trace, meta, result)
            : writeChromeTrace(args.trace, meta, result);
    if (!s.ok())
      fatal(s.message());
    std::printf("wrote the trace to %s\n", args.trace.c_str());
  }
  if (!args.profile.empty() && root) {
    s = writeProfile(args.profile, meta, result);
    if (!s.ok())
      fatal(s.message());
    std::printf("wrote the measured profile (micro-batches of %lld samples) "
                "to %s\n",
                static_cast<long long>(meta.microBatchSize()),
                args.profile.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  gpipe::rt::ensureSingleThreadedBlas(argv);
  std::set_new_handler(outOfMemory);
  // Past a file-size limit a write fails with EFBIG and takes its error
  // path (temporaries removed) instead of the signal killing the run.
  std::signal(SIGXFSZ, SIG_IGN);
  Args args = parseArgs(argc, argv);
  std::string commandLine;
  for (int i = 0; i < argc; ++i)
    commandLine += (i ? " " : "") + std::string(argv[i]);
  if (args.run.transport != TransportKind::Local) {
    Status init = initializeMpi(&argc, &argv);
    if (!init.ok())
      fatal(init.message());
    gMpi = true;
  }
  // Under MPI process 0 prints and writes; the others train quietly.
  const bool root = mpiRank() == 0;
  for (auto &[flag, path] :
       {std::pair<const char *, std::string &>{"--save-grads", args.saveGrads},
        {"--save-params", args.saveParams},
        {"--save-outputs", args.saveOutputs},
        {"--trace", args.trace},
        {"--plot", args.plot},
        {"--profile", args.profile}})
    if (!path.empty())
      checkOutputPath(flag, path);
  if (!args.checkpointDir.empty() && root)
    checkCheckpointDir(args.checkpointDir);

  ModelImage image;
  gDoing = "loading the model library";
  Status s = loadModelLibrary(args.model, image);
  if (!s.ok())
    fatal(s.message());
  const ModelMetadata &meta = image.metadata();
  // Training and inference libraries are different programs.
  if (args.predict && !meta.inference)
    fatal(args.model + " was compiled for training; --predict needs a "
                       "library compiled with gpipe-compile --inference");
  if (!args.predict && meta.inference)
    fatal(args.model + " was compiled with --inference and cannot train; "
                       "run it with --predict --data X.safetensors");
  if (!args.saveOutputs.empty() && !meta.output)
    fatal(args.model + " describes no output (compiled by an older "
                       "gpipe-compile?); recompile it to use --save-outputs");
  checkArenasFit(meta);
  gDoing = "setting up the run";
  RunOptions &run = args.run;
  setUpDevice(args, meta, run);
  if (!args.quiet && root) {
    printHeader(image);
    std::printf("device: %s\n", run.device->describe().c_str());
  }

  run.profileLayers = !args.profile.empty();
  // A profile that could not take this run's measurement is refused now,
  // not after the steps.
  if (!args.profile.empty() && root)
    if (Status p = checkProfilePath(args.profile, meta); !p.ok())
      fatal(p.message());
  if (args.kernelTimes && meta.target != "cpu")
    fatal("--kernel-times times the CPU kernels; this model is compiled for "
          "--target " +
          meta.target + " (use --trace for its actions)");
  run.timeKernels = args.kernelTimes;
  run.recordTrace = !args.trace.empty() || run.profileLayers;

  if (gMpi)
    checkSameModelOnEveryProcess(meta, run);

  // Inference: the parameters of a training run, by name.
  TrainingState loaded;
  loadPredictParameters(args, meta, run, loaded, root);
  run.predict = args.predict;
  run.keepOutputs = !args.predict && !args.saveOutputs.empty();

  // Epochs: the step count comes from the data.
  if (Status e = resolveEpochs(meta, run); !e.ok())
    fatal(e.message());

  // One run per checkpoint directory (process 0 writes the checkpoints),
  // held until the process ends: a second run is refused before it reads
  // or writes anything there.
  if (!args.checkpointDir.empty() && root) {
    static std::unique_ptr<CheckpointDirLock> lock;
    std::string note;
    if (Status l = CheckpointDirLock::acquire(args.checkpointDir, commandLine,
                                              lock, &note);
        !l.ok())
      fatal(l.message());
    if (!note.empty())
      std::fprintf(stderr, "gpipe-run: note: %s\n", note.c_str());
  }

  // A directory of checkpoints is continued only on purpose.
  bool haveCheckpoints = holdsCheckpoints(args.checkpointDir);
  if (haveCheckpoints && !args.resume)
    fatal(args.checkpointDir +
          " already holds checkpoints; pass --resume to "
          "continue from them, or choose another --checkpoint-dir");

  TrainingState resumed;
  if (!resumeFromCheckpoints(args, meta, run, haveCheckpoints, resumed, root)) {
    finalizeMpi();
    return 0;
  }
  if (!args.checkpointDir.empty())
    installCheckpointWriter(args, meta, run);
  checkNanInjection(meta, run);
  installProgressCallbacks(args, meta, run, root);
  MetricsOutputs metrics;
  installMetricsWriters(args, meta, run, root, metrics);
  installEvalReports(args, run, root, metrics);
  Engine engine(image);
  RunResult result;
  gDoing = "allocating the arenas and training";
  s = engine.run(run, result);
  if (!s.ok()) {
    reportRunFailure(s, result);
    return 1;
  }
  if (!root) {
    finalizeMpi();
    return 0;
  }
  if (gProgress)
    gProgress->finish();
  printRunSummary(args, meta, result);
  printMemoryReport(meta, result);

  gDoing = "writing the outputs";
  writeRunOutputs(args, meta, result, root);
  writeCurves(args, meta, metrics);
  finalizeMpi();
  return 0;
}
