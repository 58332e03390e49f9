//===- Checkpoint.cpp - Crash-safe training checkpoints ---------*- C++ -*-===//
//
// Writing, verifying and finding checkpoints; see Checkpoint.h for the
// format and the atomicity argument.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Checkpoint.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/ModelMetadata.h"
#include "gpipe/Runtime/SafeTensors.h"

#include "Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace gpipe::rt {

namespace {

constexpr const char *kManifest = "MANIFEST.json";
constexpr const char *kParams = "params.safetensors";
constexpr const char *kOptimizer = "optimizer.safetensors";
constexpr const char *kPrefix = "step-";
constexpr const char *kTempPrefix = ".tmp-step-";

std::string errnoText() { return std::strerror(errno); }

std::string hexHash(const char *data, size_t size) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                (unsigned long long)gpipe_rt_hash_name(data, size));
  return text;
}

std::string hexHash(const std::vector<uint8_t> &bytes) {
  return hexHash(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

/// The manifest's own checksum: FNV-1a over its canonical text, the compact
/// dump of every field but this one (nlohmann::json keeps object keys
/// sorted, so the text does not depend on the file's layout).
constexpr const char *kManifestChecksum = "manifest_fnv1a64";

std::string manifestChecksum(nlohmann::json manifest) {
  manifest.erase(kManifestChecksum);
  std::string canonical = manifest.dump();
  return hexHash(canonical.data(), canonical.size());
}

/// The step a checkpoint directory's name says (step-00000012: 12), or -1
/// when the name is not one writeCheckpoint gives.
int64_t stepOfDirectoryName(const std::string &path) {
  std::string base = path;
  while (base.size() > 1 && base.back() == '/')
    base.pop_back();
  if (size_t slash = base.rfind('/'); slash != std::string::npos)
    base = base.substr(slash + 1);
  std::string prefix = kPrefix;
  if (base.compare(0, prefix.size(), prefix) != 0 ||
      base.size() == prefix.size() || base.size() > prefix.size() + 18)
    return -1;
  int64_t step = 0;
  for (size_t i = prefix.size(); i < base.size(); ++i) {
    if (base[i] < '0' || base[i] > '9')
      return -1;
    step = step * 10 + (base[i] - '0');
  }
  return step;
}

Status readFile(const std::string &path, std::vector<uint8_t> &bytes) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Status::error("cannot open " + path + ": " + errnoText());
  bytes.clear();
  uint8_t buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0)
    bytes.insert(bytes.end(), buffer, buffer + n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad)
    return Status::error("cannot read " + path);
  return Status::success();
}

/// Removes `dir` and the files in it; on failure returns why (the first
/// entry that would not go, or the directory itself), else "".
std::string removeTree(const std::string &dir) {
  std::string why;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != ".." &&
          ::unlink((dir + "/" + name).c_str()) != 0 && why.empty())
        why = "cannot remove " + dir + "/" + name + ": " + errnoText();
    }
    ::closedir(d);
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT && why.empty())
    why = "cannot remove " + dir + ": " + errnoText();
  return why;
}

/// The entries of `dir` starting with `prefix`, sorted.
std::vector<std::string> listEntries(const std::string &dir,
                                     const std::string &prefix) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.compare(0, prefix.size(), prefix) == 0)
        names.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status makeDirectories(const std::string &dir) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty())
      continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::error("cannot create directory " + partial + ": " +
                           errnoText());
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::error(dir + " is not a directory");
  return Status::success();
}

/// Serializes `tensors` keyed by name with the shapes `shapeOf` gives.
Status serialize(const std::map<std::string, std::vector<float>> &tensors,
                 const std::map<std::string, std::vector<int64_t>> &shapes,
                 std::vector<uint8_t> &bytes) {
  std::vector<SafeTensorRef> refs;
  for (const auto &[name, values] : tensors) {
    auto it = shapes.find(name);
    if (it == shapes.end())
      return Status::error("checkpoint: no shape for tensor '" + name + "'");
    refs.push_back({name, SafeTensorsDType::F32, it->second, values.data(),
                    values.size() * 4});
  }
  return serializeSafeTensors(refs, {}, bytes);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Reads the tensors of `file` into `out`, checking they are exactly the
/// `expected` names with their shapes.
Status readTensors(const SafeTensorsFile &file,
                   const std::map<std::string, std::vector<int64_t>> &expected,
                   std::map<std::string, std::vector<float>> &out) {
  for (const SafeTensorInfo &info : file.tensors())
    if (!expected.count(info.name))
      return Status::error(file.name() + ": tensor '" + info.name +
                           "' is not one of this model's");
  for (const auto &[name, shape] : expected) {
    const SafeTensorInfo *info = file.find(name);
    if (!info)
      return Status::error(file.name() + ": tensor '" + name + "' is missing");
    if (info->shape != shape)
      return Status::error(file.name() + ": tensor '" + name + "' has shape " +
                           shapeText(info->shape) + ", the model's is " +
                           shapeText(shape));
    if (info->dtype != SafeTensorsDType::F32)
      return Status::error(file.name() + ": tensor '" + name + "' is not F32");
    std::vector<float> &values = out[name];
    Status s = file.readF32(name, values);
    if (!s.ok())
      return s;
    // A checkpoint's values are finite when written (a step with a
    // non-finite value stops or is skipped): anything else is damage,
    // named here rather than as a non-finite loss steps later.
    for (size_t i = 0; i < values.size(); ++i)
      if (!std::isfinite(values[i]))
        return Status::error(file.name() + ": tensor '" + name + "' holds " +
                             (std::isnan(values[i]) ? "nan"
                              : values[i] > 0       ? "inf"
                                                    : "-inf") +
                             " at index " + std::to_string(i) +
                             "; a checkpoint's values must be finite");
  }
  return Status::success();
}

} // namespace

std::vector<std::string> optimizerStateSlots(const std::string &optimizer) {
  std::optional<OptimizerKind> kind = parseOptimizerKind(optimizer);
  if (kind == OptimizerKind::Momentum)
    return {"momentum_buffer"};
  if (kind == OptimizerKind::Adam)
    return {"exp_avg", "exp_avg_sq"};
  return {};
}

std::string checkpointName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "%s%08lld", kPrefix, (long long)step);
  return name;
}

Status writeCheckpoint(const std::string &dir, const TrainingState &state,
                       const ModelMetadata &meta, int keep, std::string *path,
                       std::vector<std::string> *warnings) {
  Status s = makeDirectories(dir);
  if (!s.ok())
    return s;
  std::map<std::string, std::vector<int64_t>> paramShapes, stateShapes;
  for (const ParameterSpec &p : meta.parameters) {
    paramShapes[p.name] = p.shape;
    for (const std::string &slot : optimizerStateSlots(state.optimizer))
      stateShapes[slot + "." + p.name] = p.shape;
  }
  std::vector<uint8_t> params, optimizer;
  s = serialize(state.parameters, paramShapes, params);
  if (s.ok())
    s = serialize(state.optimizerState, stateShapes, optimizer);
  if (!s.ok())
    return s;

  std::string name = checkpointName(state.step);
  std::string temp = dir + "/" + kTempPrefix + name.substr(5) + "-" +
                     std::to_string(::getpid());
  removeTree(temp);
  if (::mkdir(temp.c_str(), 0755) != 0)
    return Status::error("cannot create " + temp + ": " + errnoText());
  nlohmann::json manifest = {
      {"format", "gpipe-checkpoint"}, {"version", 2},
      {"step", state.step},           {"seed", std::to_string(state.seed)},
      {"optimizer", state.optimizer}, {"optimizer_steps", state.optimizerSteps},
      {"source", state.source},       {"files", nlohmann::json::object()},
  };
  for (const auto &[file, bytes] :
       {std::pair<const char *, const std::vector<uint8_t> &>{kParams, params},
        {kOptimizer, optimizer}}) {
    s = writeFileDurably(temp + "/" + file, bytes);
    if (!s.ok()) {
      removeTree(temp);
      return s;
    }
    manifest["files"][file] = {{"bytes", bytes.size()},
                               {"fnv1a64", hexHash(bytes)}};
  }
  manifest[kManifestChecksum] = manifestChecksum(manifest);
  std::string text = manifest.dump(2) + "\n";
  s = writeFileDurably(temp + "/" + kManifest,
                       std::vector<uint8_t>(text.begin(), text.end()));
  if (!s.ok()) {
    removeTree(temp);
    return s;
  }
  syncDirectory(temp);
  std::string final = dir + "/" + name;
  // A checkpoint of the same step already there (an earlier attempt) moves
  // aside first and goes only once the new one is in place: at every
  // moment one complete copy exists.
  std::string aside = dir + "/" + kTempPrefix + "old-" + name.substr(5) + "-" +
                      std::to_string(::getpid());
  struct stat st;
  bool replacing = ::stat(final.c_str(), &st) == 0;
  if (replacing && ::rename(final.c_str(), aside.c_str()) != 0) {
    std::string why = errnoText();
    removeTree(temp);
    return Status::error("cannot move " + final + " aside: " + why);
  }
  if (::rename(temp.c_str(), final.c_str()) != 0) {
    std::string why = errnoText();
    removeTree(temp);
    if (replacing)
      ::rename(aside.c_str(), final.c_str());
    return Status::error("cannot rename " + temp + " to " + final + ": " + why);
  }
  syncDirectory(dir);
  if (replacing)
    removeTree(aside);
  if (path)
    *path = final;

  // Retention: of the checkpoints up to this one, the newest `keep` (this
  // one included) stay; newer names (damaged ones a resume skipped) are
  // left for inspection. Stale temporaries of writers that are gone go.
  std::vector<std::string> names;
  for (const std::string &n : listEntries(dir, kPrefix))
    if (n <= name)
      names.push_back(n);
  // A checkpoint that will not go is left (the run goes on) with a
  // warning: the directory keeps more than asked.
  for (size_t i = 0; i + size_t(std::max(keep, 1)) < names.size(); ++i)
    if (names[i] != name)
      if (std::string why = removeTree(dir + "/" + names[i]);
          !why.empty() && warnings)
        warnings->push_back("could not remove the old checkpoint " + dir + "/" +
                            names[i] + " (" + why +
                            "); it stays beside the newest " +
                            std::to_string(std::max(keep, 1)));
  for (const std::string &t : listEntries(dir, kTempPrefix)) {
    size_t dash = t.rfind('-');
    int pid = dash == std::string::npos ? 0 : std::atoi(t.c_str() + dash + 1);
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH)
      removeTree(dir + "/" + t);
  }
  return Status::success();
}

namespace {
Status readCheckpointUnguarded(const std::string &path,
                               const ModelMetadata &meta,
                               const std::string &optimizer,
                               TrainingState &state) {
  state = TrainingState();
  std::vector<uint8_t> bytes;
  Status s = readFile(path + "/" + kManifest, bytes);
  if (!s.ok())
    return Status::error("no complete manifest (" + s.message() + ")");
  nlohmann::json manifest =
      nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object() ||
      manifest.value("format", "") != "gpipe-checkpoint")
    return Status::error(path + "/" + kManifest +
                         " is not a gpipe checkpoint manifest");
  // Integers only: a number too large for one parses as a float, and
  // converting that to an integer is undefined.
  auto integer = [&](const char *key, int64_t &out) {
    auto it = manifest.find(key);
    if (it == manifest.end())
      return Status::error(path + "/" + kManifest + ": no '" + key + "'");
    if (!it->is_number_integer() ||
        (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)))
      return Status::error(path + "/" + kManifest + ": '" + key +
                           "' is not an integer of 64 bits: " + it->dump());
    out = it->get<int64_t>();
    return Status::success();
  };
  int64_t version = 0;
  if (manifest.contains("version"))
    if (Status s = integer("version", version); !s.ok())
      return s;
  if (version != 1 && version != 2)
    return Status::error(path + "/" + kManifest + ": unsupported version " +
                         std::to_string(version));
  // Version 2 manifests carry their own checksum; an edited step, seed or
  // optimizer step count would silently change the training. Version 1
  // (older runs) had none and is read with a warning.
  if (version == 2) {
    std::string stored = manifest.value(kManifestChecksum, std::string());
    std::string actual = manifestChecksum(manifest);
    if (stored != actual)
      return Status::error(
          path + "/" + kManifest + ": its checksum " +
          (stored.empty() ? std::string("is missing")
                          : "(" + stored + ") does not match its content (" +
                                actual + ")") +
          "; the manifest was edited or corrupted");
  } else {
    state.unverifiedManifest = true;
  }
  // Every field with its type and range, named when it is wrong.
  auto text = [&](const char *key, std::string &out, bool optional) {
    auto it = manifest.find(key);
    if (it == manifest.end())
      return optional
                 ? Status::success()
                 : Status::error(path + "/" + kManifest + ": no '" + key + "'");
    if (!it->is_string())
      return Status::error(path + "/" + kManifest + ": '" + key +
                           "' is not a string: " + it->dump());
    out = it->get<std::string>();
    return Status::success();
  };
  std::string seed;
  for (Status field : {integer("step", state.step), text("seed", seed, false),
                       text("optimizer", state.optimizer, false),
                       integer("optimizer_steps", state.optimizerSteps),
                       text("source", state.source, true)})
    if (!field.ok())
      return field;
  // The seed: a decimal string of 64 bits, as written (the command line's
  // --seed takes the same range).
  uint64_t seedValue = 0;
  auto [end, error] =
      std::from_chars(seed.data(), seed.data() + seed.size(), seedValue);
  if (seed.empty() || error != std::errc() || end != seed.data() + seed.size())
    return Status::error(path + "/" + kManifest + ": 'seed' is \"" + seed +
                         "\", expected a decimal integer from 0 to " +
                         std::to_string(UINT64_MAX));
  state.seed = seedValue;
  if (!parseOptimizerKind(state.optimizer))
    return Status::error(path + "/" + kManifest + ": 'optimizer' is \"" +
                         state.optimizer + "\", which names no optimizer");
  if (state.step < 0 || state.optimizerSteps < 0)
    return Status::error(path + "/" + kManifest + ": negative step count");
  if (int64_t named = stepOfDirectoryName(path);
      named >= 0 && named != state.step)
    return Status::error(path + "/" + kManifest + ": step " +
                         std::to_string(state.step) +
                         " does not match the directory's name (step " +
                         std::to_string(named) + ")");
  if (state.optimizerSteps > state.step)
    return Status::error(path + "/" + kManifest + ": optimizer_steps " +
                         std::to_string(state.optimizerSteps) +
                         " exceeds the step " + std::to_string(state.step) +
                         " (at most one update per step)");
  if (!optimizer.empty() && state.optimizer != optimizer &&
      optimizerStateSlots(state.optimizer) != optimizerStateSlots(optimizer))
    return Status::error("it holds optimizer state for " + state.optimizer +
                         ", this run uses " + optimizer);

  std::map<std::string, std::vector<int64_t>> paramShapes, stateShapes;
  for (const ParameterSpec &p : meta.parameters) {
    paramShapes[p.name] = p.shape;
    for (const std::string &slot : optimizerStateSlots(state.optimizer))
      stateShapes[slot + "." + p.name] = p.shape;
  }
  for (const auto &[file, shapes, out] :
       {std::tuple<const char *,
                   const std::map<std::string, std::vector<int64_t>> &,
                   std::map<std::string, std::vector<float>> &>{
            kParams, paramShapes, state.parameters},
        {kOptimizer, stateShapes, state.optimizerState}}) {
    const nlohmann::json *entry = nullptr;
    if (manifest.contains("files") && manifest["files"].contains(file))
      entry = &manifest["files"][file];
    if (!entry)
      return Status::error(path + "/" + kManifest + " does not list " + file);
    std::string filePath = path + "/" + file;
    s = readFile(filePath, bytes);
    if (!s.ok())
      return s;
    auto listed = entry->is_object() ? entry->find("bytes") : entry->end();
    bool sizeMatches = entry->is_object() && listed != entry->end() &&
                       listed->is_number_integer() &&
                       listed->get<nlohmann::json::number_integer_t>() >= 0 &&
                       listed->get<uint64_t>() == bytes.size();
    if (!sizeMatches ||
        hexHash(bytes) != entry->value("fnv1a64", std::string()))
      return Status::error(filePath + " does not match its manifest (" +
                           std::to_string(bytes.size()) +
                           " bytes; torn or corrupted)");
    SafeTensorsFile tensors;
    s = SafeTensorsFile::parse(std::move(bytes), filePath, tensors);
    if (!s.ok())
      return s;
    s = readTensors(tensors, shapes, out);
    if (!s.ok())
      return s;
  }
  return Status::success();
}

} // namespace

Status readCheckpoint(const std::string &path, const ModelMetadata &meta,
                      const std::string &optimizer, TrainingState &state) {
  // A manifest with fields of the wrong JSON type makes the library throw:
  // that checkpoint is damaged, not the program.
  try {
    return readCheckpointUnguarded(path, meta, optimizer, state);
  } catch (const std::exception &e) {
    return Status::error(path + "/" + kManifest + ": malformed (" + e.what() +
                         ")");
  }
}

Status findLatestCheckpoint(const std::string &dir, const ModelMetadata &meta,
                            const std::string &optimizer, std::string &path,
                            TrainingState &state,
                            std::vector<std::string> *skipped) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::error("checkpoint directory " + dir + " does not exist");
  std::vector<std::string> names = listEntries(dir, kPrefix);
  std::string reasons;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    std::string candidate = dir + "/" + *it;
    Status s = readCheckpoint(candidate, meta, optimizer, state);
    if (s.ok()) {
      path = candidate;
      return Status::success();
    }
    if (skipped)
      skipped->push_back(candidate + ": " + s.message());
    reasons += "\n  " + candidate + ": " + s.message();
  }
  return Status::error(
      "no usable checkpoint in " + dir +
      (names.empty() ? std::string(" (it holds none)") : ":" + reasons));
}

//===----------------------------------------------------------------------===//
// The directory's lock
//===----------------------------------------------------------------------===//

Status CheckpointDirLock::acquire(const std::string &dir,
                                  const std::string &command,
                                  std::unique_ptr<CheckpointDirLock> &out,
                                  std::string *note) {
  if (Status s = makeDirectories(dir); !s.ok())
    return Status::error("--checkpoint-dir " + dir + ": " + s.message());
  std::string path = dir + "/LOCK";
  int fd = -1;
  auto owner = [&] {
    std::string text;
    char buffer[512];
    ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
    if (n > 0)
      text.assign(buffer, size_t(n));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\0'))
      text.pop_back();
    return text;
  };
  // A releasing owner unlinks the file while it holds the lock, so a lock
  // taken on a file no longer at `path` is stale: open the path again.
  for (int attempt = 0;; ++attempt) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return Status::error("--checkpoint-dir " + dir +
                           ": cannot open its lock " + path + ": " +
                           errnoText());
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int error = errno;
      std::string who = owner();
      ::close(fd);
      if (error == EWOULDBLOCK)
        return Status::error(
            "--checkpoint-dir " + dir + " is in use by another run (" +
            (who.empty() ? std::string("its owner has not said who it is yet")
                         : who) +
            "; lock " + path +
            "): two runs writing one directory would mix their checkpoints. "
            "Wait for it, or give this run another directory");
      return Status::error("--checkpoint-dir " + dir + ": cannot lock " + path +
                           ": " + std::strerror(error));
    }
    struct stat held, current;
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &current) == 0 &&
        held.st_dev == current.st_dev && held.st_ino == current.st_ino)
      break;
    ::close(fd);
    if (attempt == 100)
      return Status::error("--checkpoint-dir " + dir + ": its lock " + path +
                           " keeps being replaced; is another run starting "
                           "and ending in a loop?");
  }
  // Ours. An owner recorded but not holding the lock ended without
  // releasing it.
  std::string previous = owner();
  if (!previous.empty() && note)
    *note = "--checkpoint-dir " + dir +
            ": taking over the lock of a run "
            "that ended without releasing it (" +
            previous + ")";
  char host[256] = {};
  (void)::gethostname(host, sizeof host - 1);
  char since[64] = "?";
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (::gmtime_r(&now, &utc))
    std::strftime(since, sizeof since, "%Y-%m-%d %H:%M:%S UTC", &utc);
  std::string self = "gpipe-run pid " + std::to_string(::getpid()) +
                     " on host " + host + " since " + since + ": " + command +
                     "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, self.data(), self.size(), 0) != ssize_t(self.size())) {
    std::string why = errnoText();
    (void)::unlink(path.c_str()); // still held: no one else has it
    ::close(fd);
    return Status::error("--checkpoint-dir " + dir +
                         ": cannot write its lock " + path + ": " + why);
  }
  out.reset(new CheckpointDirLock());
  out->fd = fd;
  out->path = path;
  return Status::success();
}

CheckpointDirLock::~CheckpointDirLock() {
  if (fd < 0)
    return;
  // Released: the file goes while it is still held (a run that opened it
  // meanwhile sees it is gone and opens the path again), so a finished run
  // leaves nothing behind.
  (void)::unlink(path.c_str());
  ::close(fd);
}

} // namespace gpipe::rt
