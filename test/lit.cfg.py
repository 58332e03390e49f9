# -*- Python -*-
# lit configuration for gpipe's tests: every .mlir and .test file under
# test/, run with gpipe's tools and LLVM's FileCheck, not and split-file.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "GPIPE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "Utils", "CMakeLists.txt", "README.md", "lit.cfg.py",
                   "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gpipe_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root,
                                                      "Frontend", "ONNX",
                                                      "Inputs")))

# ONNX's backend node tests gpipe-node-test runs (test/Frontend/ONNX/NodeTests).
config.substitutions.append(("%nodetests", os.path.join(
    config.test_source_root, "Frontend", "ONNX", "NodeTests", "cases")))

# The model zoo: ecosystem models and PyTorch's references (test/Zoo).
config.substitutions.append(("%zoo", os.path.join(config.test_source_root,
                                                   "Zoo", "Inputs")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.gpipe_tools_dir, config.llvm_tools_dir]
tools = ["gpipe-opt", "gpipe-import", "gpipe-compile", "gpipe-run",
         "gpipe-calibrate"]

# The tests time ops by the built-in profiles unless they name a machine
# profile: one gpipe-calibrate left in ~/.cache must not change their plans.
config.environment["GPIPE_MACHINE_FILE"] = "none"
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Compares tensors of two safetensors files (bitwise or by relative error).
config.substitutions.append(
    ("%compare", "python3 " + os.path.join(config.test_source_root, "Utils",
                                           "compare-safetensors.py")))
# The GPU check's bundle and a bare GPU machine's environment (test/CUDA).
config.substitutions.append(("%scripts", os.path.join(config.gpipe_src_root,
                                                      "scripts")))
config.substitutions.append(("%gpipe_obj_root", config.gpipe_obj_root))
config.substitutions.append(
    ("%stripped-env", "bash " + os.path.join(config.test_source_root, "Utils",
                                             "stripped-env.sh")))
config.substitutions.append(
    ("%set-tensor", "python3 " + os.path.join(config.test_source_root, "Utils",
                                              "set-tensor.py")))
config.substitutions.append(
    ("%fill-tensor", "python3 " + os.path.join(config.test_source_root,
                                               "Utils", "fill-tensor.py")))
config.substitutions.append(
    ("%add-tensor", "python3 " + os.path.join(config.test_source_root, "Utils",
                                              "add-tensor.py")))
config.substitutions.append(
    ("%take-samples", "python3 " + os.path.join(config.test_source_root,
                                                "Utils", "take-samples.py")))
config.substitutions.append(
    ("%random-data", "python3 " + os.path.join(config.test_source_root,
                                               "Utils", "random-data.py")))
config.substitutions.append(
    ("%kill-resume", "python3 " + os.path.join(config.test_source_root, "Utils",
                                               "kill-resume.py")))
config.substitutions.append(
    ("%exact-budget", "env PATH=" + config.gpipe_tools_dir + ":" +
     config.environment["PATH"] + " bash " +
     os.path.join(config.test_source_root, "Utils", "exact-budget.sh")))
config.substitutions.append(
    ("%check-profile", "python3 " + os.path.join(config.test_source_root,
                                                 "Utils", "check-profile.py")))
config.substitutions.append(
    ("%within", "python3 " + os.path.join(config.test_source_root, "Utils",
                                          "within.py")))
config.substitutions.append(
    ("%check-eval", "python3 " + os.path.join(config.test_source_root, "Utils",
                                              "check-eval.py")))
config.substitutions.append(
    ("%eval-loss", "python3 " + os.path.join(config.test_source_root, "Utils",
                                             "eval-loss.py")))
config.substitutions.append(
    ("%read-tfevents", "python3 " + os.path.join(config.test_source_root,
                                                 "Utils", "read-tfevents.py")))
# Trains one model under many schedules and compares with GPipe at K = 1
# (the script calls gpipe-compile and gpipe-run from the build).
config.substitutions.append(
    ("%schedule-sweep", "env PATH=" + config.gpipe_tools_dir + ":" +
     config.environment["PATH"] + " bash " +
     os.path.join(config.test_source_root, "Utils", "schedule-sweep.sh")))
config.substitutions.append(
    ("%csv-sweep", "env PATH=" + config.gpipe_tools_dir + ":" +
     config.environment["PATH"] + " bash " +
     os.path.join(config.test_source_root, "Utils", "csv-sweep.sh")))
# Open MPI refuses root unless told; CI runs as root. Oversubscribe: more
# ranks than cores.
config.substitutions.append(
    ("%mpirun", "mpirun --allow-run-as-root --oversubscribe --mca btl self,vader"))
import shutil
if shutil.which("mpirun"):
    config.available_features.add("mpi")

# asan: the tools are built with AddressSanitizer (GPIPE_ENABLE_FUZZERS,
# scripts/sanitize.sh asan), whose shadow memory needs terabytes of address
# space: tests under `ulimit -v` cannot start them.
if getattr(config, "gpipe_asan", False):
    config.available_features.add("asan")

# libxsmm: the runtime can run GEMMs on libxsmm (gpipe-compile --gemm).
if getattr(config, "gpipe_libxsmm", False):
    config.available_features.add("libxsmm")

# cuda-backend: gpipe-run was built with the CUDA device. cuda-device: this
# machine also has an NVIDIA GPU (tests that train on it).
if getattr(config, "gpipe_cuda_backend", False):
    config.available_features.add("cuda-backend")
    import subprocess
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                 text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        listing = ""
    if "GPU 0" in listing:
        config.available_features.add("cuda-device")
