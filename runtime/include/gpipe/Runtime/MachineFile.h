//===- MachineFile.h - Where the machine profile lives ----------*- C++ -*-===//
//
// The machine profile gpipe-calibrate measures (the kernels' GEMM rate by
// shape and thread count, the streaming rate of the elementwise kernels by
// size, the cost of one kernel call, the rank-to-rank link) and the
// compiler's cost model reads: its format's name and version, and where it
// is looked for when no --machine-file is given. Header-only C++17: the
// compiler includes it without linking the runtime. The fields are listed
// in docs/Tuning.md, "The machine profile".
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_MACHINEFILE_H
#define GPIPE_RUNTIME_MACHINEFILE_H

#include <cstdlib>
#include <string>

namespace gpipe::abi {

/// The machine profile's `format`.
inline constexpr const char *kMachineFormat = "gpipe-machine";
/// Its layout's version; readers refuse others.
inline constexpr int kMachineVersion = 1;

/// The environment variable that names the machine profile; `none` turns
/// the default off (the built-in estimates are used).
inline constexpr const char *kMachineFileEnv = "GPIPE_MACHINE_FILE";

/// The machine profile used when no --machine-file is given:
/// $GPIPE_MACHINE_FILE ("" for `none`), else
/// $XDG_CACHE_HOME/gpipe/machine.json, else ~/.cache/gpipe/machine.json
/// ("" when neither variable is set). The file need not exist.
inline std::string getDefaultMachineFile() {
  if (const char *env = std::getenv(kMachineFileEnv); env && *env)
    return std::string(env) == "none" ? std::string() : std::string(env);
  if (const char *cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    return std::string(cache) + "/gpipe/machine.json";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/gpipe/machine.json";
  return std::string();
}

} // namespace gpipe::abi

#endif // GPIPE_RUNTIME_MACHINEFILE_H
