#!/usr/bin/python3
#===- adversarial.py - Hostile inputs to every gpipe tool, counted ---------===#
#
# Usage: /usr/bin/python3 scripts/adversarial.py [BUILD_DIR] [options]
#
#   BUILD_DIR          the build whose bin/ holds the tools (default build/)
#   --family F         run only family F (repeatable): onnx, mlir, corpus,
#                      flags, data, model, checkpoint, faults, limits,
#                      identity
#   --case SUBSTRING   run only the cases whose name contains it
#   --timeout S        per command (default 60 s)
#   --keep DIR         work in DIR and keep it (default: a temporary
#                      directory, removed at the end)
#   --list             print the cases and exit
#   -v                 print every case, not just the findings
#
# Runs several hundred hostile inputs through gpipe-import, gpipe-opt,
# gpipe-compile and gpipe-run, each under a timeout, and classifies each:
#
#   clean    a non-zero exit with an "error:" that names the value, flag,
#            node or file at fault (case by case: one of a few words must
#            appear), or a success where success is correct (a model gpipe
#            may train is checked against numpy's loss and gradients)
#   CRASH    a signal, an abort, a stack dump, "LLVM ERROR", "Assertion",
#            "terminate called", a sanitizer report
#   HANG     still running at the timeout (killed with its process group)
#   SUSPECT  exit 0 where an error was expected, an error that names
#            nothing, a wrong result, a temporary file left behind, or a
#            file the user had changed or lost
#
# and prints the findings, per-family counts and a last line
#
#   adversarial: N cases, N clean, N crash, N hang, N suspect
#
# Exit status 0 when every case is clean. Python 3 standard library only;
# the ONNX family builds its models with scripts/adversarial-onnx.py, which
# needs the onnx and numpy packages (Debian: python3-onnx) and is skipped,
# with a note, without them. The limits family mounts a small tmpfs when
# it may (root) and skips that part otherwise. Documented in
# docs/Hardening.md.
#
#===----------------------------------------------------------------------===#
import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS = os.path.join(ROOT, "test", "Frontend", "ONNX", "Inputs")

CRASH_MARKERS = [
    "Stack dump", "PLEASE submit a bug report", "LLVM ERROR", "Assertion",
    "terminate called", "Segmentation fault", "core dumped", "Aborted",
    "AddressSanitizer", "UndefinedBehaviorSanitizer", "runtime error:",
    "ThreadSanitizer", "what():", "double free", "corrupted size",
    "corrupted double-linked", "free(): invalid", "malloc(): ", "stack smashing", "Bus error", "Traceback (most recent"]


class Case:
    """One hostile input: commands run in order until one fails."""

    def __init__(self, family, name, cmds, expect="error", names=(),
                 check=None, limits=None, setup=None, env=None,
                 timeout=None, stdin=None, signal_after=None,
                 may_die=False, dies_by=(), error_pattern=None):
        self.family, self.name = family, name
        self.cmds = cmds if cmds and isinstance(cmds[0], list) else [cmds]
        self.expect = expect          # "error", "ok" or "any"
        self.names = list(names)      # an error must contain one of these
        self.check = check            # (result) -> None or a reason
        self.limits = limits or {}    # resource.RLIMIT_* -> value
        self.setup = setup            # () -> None, run first
        self.env = env or {}
        self.timeout = timeout
        self.stdin = stdin
        self.signal_after = signal_after  # (seconds, signal) for the last cmd
        # Killed by the signal we sent, or by one the case asks for (a
        # process that kills itself): the right end, if nothing is left.
        self.dies_by = set(dies_by)
        if may_die and signal_after:
            self.dies_by.add(int(signal_after[1]))
        self.error_pattern = error_pattern  # also counts as an error line


class Result:
    def __init__(self):
        self.rc = 0
        self.output = ""
        self.hung = False
        self.cmd = None
        self.seconds = 0.0


class Driver:
    def __init__(self, build, work, timeout, verbose):
        self.bin = os.path.join(build, "bin")
        self.work = work
        self.timeout = timeout
        self.verbose = verbose
        self.tmp = os.path.join(work, "tmp")
        os.makedirs(self.tmp, exist_ok=True)
        self.cases = []
        self.notes = []
        # Commands that discard output write to @NULL@: a character device
        # like /dev/null made in the work directory (as root), so that a
        # tool replacing or removing the device it was given as an output
        # shows, on a node of our own; else a plain file.
        self.null = os.path.join(work, "null")
        try:
            os.mknod(self.null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            self.null_is_device = True
        except OSError:
            open(self.null, "w").close()
            self.null_is_device = False

    def tool(self, name):
        return os.path.join(self.bin, name)

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    # -- running -----------------------------------------------------------

    def run_cmd(self, cmd, case, last):
        argv = [self.tool(cmd[0]) if cmd[0].startswith("gpipe-") else cmd[0]]
        argv += [a.replace("@NULL@", self.null) for a in cmd[1:]]
        env = dict(os.environ)
        env["TMPDIR"] = self.tmp
        env.update(case.env)
        limits = case.limits

        def preexec():
            os.setsid()
            for what, value in limits.items():
                resource.setrlimit(what, (value, value))
        res = Result()
        res.cmd = argv
        start = time.monotonic()
        stdin = open(case.stdin, "rb") if case.stdin else subprocess.DEVNULL
        p = subprocess.Popen(argv, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, stdin=stdin,
                             preexec_fn=preexec, cwd=self.work, env=env)
        limit = case.timeout or self.timeout
        try:
            if last and case.signal_after:
                delay, sig = case.signal_after
                try:
                    out, _ = p.communicate(timeout=delay)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, sig) if sig == signal.SIGKILL else \
                        p.send_signal(sig)
                    out, _ = p.communicate(timeout=limit)
            else:
                out, _ = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, _ = p.communicate()
            res.hung = True
        finally:
            if case.stdin:
                stdin.close()
        res.seconds = time.monotonic() - start
        res.rc = p.returncode
        res.output = out.decode("utf-8", "replace")
        return res

    def classify(self, case):
        """(verdict, reason, result): verdict clean, crash, hang, suspect."""
        for stale in os.listdir(self.tmp):
            p = os.path.join(self.tmp, stale)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.remove(p)
        if case.setup:
            case.setup()
        res = None
        for i, cmd in enumerate(case.cmds):
            res = self.run_cmd(cmd, case, i == len(case.cmds) - 1)
            if res.hung:
                return "hang", f"still running after {case.timeout or self.timeout} s", res
            crash = self.crash_reason(res, case)
            if crash:
                return "crash", crash, res
            if res.rc != 0:
                break
        if self.null_is_device:
            st = os.lstat(self.null) if os.path.lexists(self.null) else None
            if not st or not stat.S_ISCHR(st.st_mode):
                if st:
                    os.remove(self.null)
                os.mknod(self.null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
                return "suspect", ("the device given as an output (a node "
                                   "like /dev/null) was %s" %
                                   ("replaced by a regular file" if st
                                    else "removed")), res
        left = os.listdir(self.tmp)
        leftover = f"left {left[:3]} in $TMPDIR" if left else None
        failed = res.rc != 0
        died_as_asked = res.rc < 0 and -res.rc in case.dies_by
        if failed and not died_as_asked:
            first = error_line(res.output)
            if case.expect == "ok":
                return "suspect", "failed where success is right: " + (
                    first or res.output[-200:]), res
            if not first and case.error_pattern:
                first = next((l for l in res.output.splitlines()
                              if re.search(case.error_pattern, l)), None)
            if not first:
                return "suspect", "exit %d without an 'error:' line" % res.rc, res
            if case.names and not any(n.lower() in res.output.lower()
                                      for n in case.names):
                return "suspect", "the error names none of %s: %s" % (
                    case.names, first), res
            # gpipe-opt keeps MLIR's printing of the operation (it is the
            # tool for reading IR); the user's tools do not dump it.
            if "see current operation" in res.output and \
                    not res.cmd[0].endswith("gpipe-opt"):
                return "suspect", ("the error is followed by a dump of the "
                                   "operation (%d bytes of output)" %
                                   len(res.output)), res
        elif not failed and case.expect == "error":
            return "suspect", "exit 0 where an error was expected", res
        if case.check:
            why = case.check(res)
            if why:
                return "suspect", why, res
        if leftover:
            return "suspect", leftover, res
        return "clean", ("died by the signal, as asked" if died_as_asked
                         else "error" if failed else "success"), res

    def crash_reason(self, res, case):
        if res.rc < 0:
            sig = -res.rc
            if sig in case.dies_by:
                return None
            return "killed by signal %d (%s)" % (sig, signal.Signals(sig).name)
        if res.rc in (134, 139) and res.cmd[0].endswith("mpirun"):
            return "exit status %d" % res.rc
        for marker in CRASH_MARKERS:
            if marker in res.output:
                line = next((l for l in res.output.splitlines()
                             if marker in l), marker)
                return "'%s' in the output: %s" % (marker, line.strip()[:160])
        return None


# LLVM's command-line parser words its errors "<tool>: for the --x option:
# ..." (naming the flag and the value) and "<tool>: Unknown command line
# argument '--x'"; both are clear errors.
LLVM_CL_ERROR = re.compile(r"^(\S+: (for the -+[\w-]+ option: |Unknown "
                           r"command line argument|Not enough positional|"
                           r"Too many positional|Did you mean|error while "
                           r"loading shared libraries)|<Pass-Options-Parser>: )")


def error_line(output):
    for line in output.splitlines():
        if "error:" in line or LLVM_CL_ERROR.match(line):
            return line.strip()[:240]
    return None


# -- files ------------------------------------------------------------------

def write_safetensors(path, tensors, metadata=None, header_extra=None,
                      raw_header=None):
    """tensors: name -> (dtype, shape, bytes)."""
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if header_extra:
        for k, v in header_extra.items():
            if k in header and isinstance(v, dict):
                header[k].update(v)
            else:
                header[k] = v
    text = raw_header if raw_header is not None else json.dumps(
        header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_tensors(path):
    """(metadata, name -> (dtype, shape, bytes)): write_safetensors' input."""
    data = open(path, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"],
                         data[8 + size + a:8 + size + b])
    return header.get("__metadata__", {}), tensors


def with_value(path, out, tensor, index, value):
    """Writes `path` to `out` with element `index` of F32 `tensor` set."""
    meta, tensors = read_tensors(path)
    dtype, shape, blob = tensors[tensor]
    v = list(struct.unpack("<%df" % (len(blob) // 4), blob))
    v[index] = value
    tensors[tensor] = (dtype, shape, f32(v))
    write_safetensors(out, tensors, meta)
    return out


def read_safetensors(path):
    meta, tensors = read_tensors(path)
    out = {}
    for name, (dtype, shape, raw) in tensors.items():
        if dtype == "F32":
            out[name] = list(struct.unpack("<%df" % (len(raw) // 4), raw))
    return meta, out


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def i64(values):
    return struct.pack("<%dq" % len(values), *values)


def mlp_data(path, n, features=4, classes=3, seed=1, label_fn=None,
             **kw):
    rng = random.Random(seed)
    x = [rng.uniform(-1, 1) for _ in range(n * features)]
    y = [label_fn(i) if label_fn else rng.randrange(classes) for i in range(n)]
    tensors = {"input": ("F32", [n, features], f32(x)),
               "labels": ("I64", [n], i64(y))}
    tensors.update(kw.pop("tensors", {}))
    write_safetensors(path, tensors, **kw)


def file_digest(path):
    if os.path.isdir(path):
        h = hashlib.sha256()
        for dirpath, dirs, files in sorted(os.walk(path)):
            dirs.sort()
            for f in sorted(files):
                p = os.path.join(dirpath, f)
                h.update(os.path.relpath(p, path).encode())
                if os.path.islink(p):
                    h.update(os.readlink(p).encode())
                elif os.path.isfile(p):
                    h.update(open(p, "rb").read())
        return h.hexdigest()
    if not os.path.exists(path):
        return None
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def unchanged(path, what="file"):
    """A check that `path` is as it was when the case was made."""
    before = file_digest(path)

    def check(res):
        if file_digest(path) != before:
            return "the user's %s %s was changed or removed" % (
                what, os.path.basename(path))
        return None
    return check


def absent(path):
    def check(res):
        if res.rc != 0 and os.path.exists(path):
            return "a failed run left %s" % os.path.basename(path)
        return None
    return check


def all_of(*checks):
    def check(res):
        for c in checks:
            if c:
                why = c(res)
                if why:
                    return why
        return None
    return check


# -- the families -----------------------------------------------------------

PRESET_MLP = ["--preset", "mlp", "--depth", "2", "--width", "8",
              "--in-features", "4", "--classes", "3", "--batch", "8"]
PRESET_GPT = ["--preset", "gpt", "--depth", "1", "--width", "16", "--heads",
              "2", "--seq-len", "8", "--batch", "4", "--vocab", "16"]
PRESET_RESNET = ["--preset", "resnet", "--depth", "1", "--width", "4",
                 "--image-size", "8", "--classes", "3", "--batch", "4"]


def setup_base(d):
    """Models and data the families share, compiled once."""
    base = d.path("base")
    os.makedirs(base, exist_ok=True)
    builds = {
        "mlp": PRESET_MLP + ["--stages", "2", "--microbatches", "2"],
        "mlp1": PRESET_MLP + ["--stages", "1"],
        "mlp-m4": PRESET_MLP + ["--stages", "2", "--microbatches", "4"],
        "mlp-adam": PRESET_MLP + ["--stages", "2", "--optimizer", "adam"],
        "mlp-wide": ["--preset", "mlp", "--depth", "2", "--width", "16",
                     "--in-features", "4", "--classes", "3", "--batch", "8",
                     "--stages", "2"],
        "mlp-dp": PRESET_MLP + ["--stages", "1", "--microbatches", "2",
                                "--data-parallel", "2"],
        "gpt": PRESET_GPT + ["--stages", "2", "--microbatches", "2"],
        "resnet": PRESET_RESNET + ["--stages", "2", "--microbatches", "2"],
        "onnx-mlp": [os.path.join(INPUTS, "mlp.onnx"), "--stages", "2"],
    }
    for name, args in builds.items():
        out = os.path.join(base, name + ".so")
        r = subprocess.run([d.tool("gpipe-compile")] + args +
                           ["--quiet", "-o", out], capture_output=True,
                           text=True)
        if r.returncode != 0:
            sys.exit("adversarial: cannot build the base model %s: %s" %
                     (name, r.stdout + r.stderr))
    mlp_data(os.path.join(base, "mlp.st"), 16)
    r = subprocess.run([d.tool("gpipe-import")] + PRESET_MLP +
                       ["-o", os.path.join(base, "mlp.mlir")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("adversarial: gpipe-import failed: " + r.stderr)
    # A checkpoint directory of the MLP after 2 steps.
    r = subprocess.run([d.tool("gpipe-run"), os.path.join(base, "mlp.so"),
                        "--steps", "2", "--checkpoint-dir",
                        os.path.join(base, "ckpt"), "--checkpoint-every", "1",
                        "--quiet"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("adversarial: cannot write the base checkpoint: " + r.stdout)


def so(d, name):
    return d.path("base", name + ".so")


def onnx_family(d, add):
    gen = os.path.join(ROOT, "scripts", "adversarial-onnx.py")
    out = d.path("onnx")
    r = subprocess.run(["/usr/bin/python3", gen, out], capture_output=True,
                       text=True)
    if r.returncode != 0:
        d.notes.append("onnx: skipped, scripts/adversarial-onnx.py failed "
                       "(needs python3-onnx and numpy): " +
                       (r.stderr.strip().splitlines() or [""])[-1])
        return
    cases = json.load(open(os.path.join(out, "cases.json")))
    for c in cases:
        f, name = c["file"], c["name"]
        if "data" not in c:
            add(Case("onnx", name, ["gpipe-import", f, "-o",
                                    d.path("onnx", name + ".mlir")],
                     c["expect"], c["names"]))
            continue
        lib = d.path("onnx", name + ".so")
        grads = d.path("onnx", name + ".grads.st")
        add(Case("onnx", name,
                 [["gpipe-compile", f, "--stages", "1", "--quiet", "-o", lib],
                  ["gpipe-run", lib, "--steps", "1", "--quiet", "--data",
                   c["data"], "--save-grads", grads]],
                 c["expect"], c["names"], check=numbers_match(c, grads)))
        # The same model cut in two with two micro-batches where it can:
        # batch statistics are per micro-batch, so only the loss of a
        # model without batch norm compares.
        if "bn" not in name and c["batch"] % 2 == 0:
            lib2 = d.path("onnx", name + ".k2.so")
            grads2 = d.path("onnx", name + ".k2.grads.st")
            add(Case("onnx", name + "@K2M2",
                     [["gpipe-compile", f, "--stages", "2", "--microbatches",
                       "2", "--quiet", "-o", lib2],
                      ["gpipe-run", lib2, "--steps", "1", "--quiet", "--data",
                       c["data"], "--save-grads", grads2]],
                     c["expect"], c["names"] + ["stage", "layer"],
                     check=numbers_match(c, grads2)))


def numbers_match(c, grads_path):
    def check(res):
        if res.rc != 0 or "loss" not in c:
            return None
        meta, grads = read_safetensors(grads_path)
        loss = float(meta.get("loss", "nan"))
        if not abs(loss - c["loss"]) <= 1e-4 * max(1.0, abs(c["loss"])):
            return "wrong loss: gpipe %.7g, numpy %.7g" % (loss, c["loss"])
        for name, picked in c["grads"].items():
            if name not in grads:
                return "no gradient of '%s' saved" % name
            scale = max([abs(v) for v in picked.values()] + [1e-3])
            for i, want in picked.items():
                got = grads[name][int(i)]
                if not abs(got - want) <= 2e-3 * scale + 1e-5:
                    return "wrong gradient %s[%s]: gpipe %.6g, numpy %.6g" % (
                        name, i, got, want)
        return None
    return check


NN_T = "tensor<8x4xf32>"


def mlir_family(d, add):
    m = d.path("mlir")
    os.makedirs(m, exist_ok=True)

    def fwd(body, arg=NN_T, res=NN_T, pre=""):
        return (pre + "func.func @forward(%x: " + arg + ") -> " + res +
                " {\n" + body + "\n}\n")
    relu = "  %0 = nn.relu %x : " + NN_T + "\n  return %0 : " + NN_T
    img = "tensor<2x2x6x6xf32>"

    def conv(attrs, w="tensor<3x2x3x3xf32>", out="tensor<2x3x4x4xf32>"):
        return fwd("  %w = nn.param @w : " + w + "\n  %0 = nn.conv2d %x, %w " +
                   attrs + " : (" + img + ", " + w + ") -> " + out +
                   "\n  return %0 : " + out, img, out,
                   "nn.parameter @w : " + w + " init normal(0.1)\n")

    def pool(op, attrs, out):
        return fwd("  %0 = nn." + op + " %x " + attrs + " : " + img +
                   " -> " + out + "\n  return %0 : " + out, img, out)
    win = "strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>"
    texts = {
        "empty": ("", "error", ["forward", "layer", "network"]),
        "garbage": ("\x00\x01\x02\xff\xfe binary", "error", ["error"]),
        "unknown-op": (fwd("  %0 = nn.frobnicate %x : " + NN_T +
                           "\n  return %0 : " + NN_T), "error",
                       ["nn.frobnicate"]),
        "unregistered-dialect": (fwd('  %0 = "foo.bar"(%x) : (' + NN_T +
                                     ") -> " + NN_T + "\n  return %0 : " +
                                     NN_T), "error", ["foo.bar"]),
        "no-forward": ("func.func @other(%x: " + NN_T + ") -> " + NN_T +
                       " {\n" + relu + "\n}\n", "error", ["forward"]),
        "two-forwards": (fwd(relu) + fwd(relu), "error", ["forward"]),
        "forward-no-args": ("func.func @forward() -> " + NN_T + " {\n"
                            "  %0 = nn.constant dense<1.0> : " + NN_T +
                            "\n  return %0 : " + NN_T + "\n}\n", "error",
                            ["forward", "input"]),
        "forward-two-inputs": ("func.func @forward(%x: " + NN_T + ", %y: " +
                               NN_T + ") -> " + NN_T + " {\n  %0 = nn.add "
                               "%x, %y : (" + NN_T + ", " + NN_T + ") -> " +
                               NN_T + "\n  return %0 : " + NN_T + "\n}\n",
                               "any", ["input", "forward"]),
        "forward-no-result": ("func.func @forward(%x: " + NN_T + ") {\n"
                              "  return\n}\n", "error", ["forward", "result"]),
        "forward-dynamic": (fwd("  %0 = nn.relu %x : tensor<?x4xf32>\n"
                                "  return %0 : tensor<?x4xf32>",
                                "tensor<?x4xf32>", "tensor<?x4xf32>"),
                            "error", ["?x4", "dynamic", "static"]),
        "forward-unranked": (fwd("  return %x : tensor<*xf32>",
                                 "tensor<*xf32>", "tensor<*xf32>"), "error",
                             ["tensor<*xf32>", "ranked"]),
        "forward-f64": (fwd("  %0 = nn.relu %x : tensor<8x4xf64>\n"
                            "  return %0 : tensor<8x4xf64>",
                            "tensor<8x4xf64>", "tensor<8x4xf64>"), "any",
                        ["f64"]),
        "forward-scalar-output": (fwd("  %0 = nn.reduce_sum %x {axes = array<i64: 0, 1>} : " + NN_T + " -> tensor<f32>\n  return %0 : tensor<f32>",
                                      NN_T, "tensor<f32>"), "error",
                                  ["tensor<f32>", "output", "class"]),
        "forward-i64-output": (fwd("  %0 = nn.cast %x : " + NN_T +
                                   " -> tensor<8x4xi64>\n  return %0 : "
                                   "tensor<8x4xi64>", NN_T,
                                   "tensor<8x4xi64>"), "error",
                               ["i64", "output"]),
        "huge-dim-literal": (fwd(relu.replace("8x4", "99999999999999999999x4"),
                                 "tensor<99999999999999999999x4xf32>",
                                 "tensor<99999999999999999999x4xf32>"),
                             "error", ["99999999999999999999", "dimension"]),
        "float-literal-overflow": (fwd("  %c = nn.constant dense<1.0e999> : "
                                       + NN_T + "\n  %0 = nn.add %x, %c : (" +
                                       NN_T + ", " + NN_T + ") -> " + NN_T +
                                       "\n  return %0 : " + NN_T), "any",
                                   ["1.0e999", "float"]),
        "param-undefined": (fwd("  %w = nn.param @nope : tensor<4x4xf32>\n"
                                "  %0 = nn.matmul %x, %w : (" + NN_T +
                                ", tensor<4x4xf32>) -> " + NN_T +
                                "\n  return %0 : " + NN_T), "error",
                            ["@nope", "nope"]),
        "param-type-mismatch": (fwd("  %w = nn.param @w : tensor<4x4xf32>\n"
                                    "  %0 = nn.matmul %x, %w : (" + NN_T +
                                    ", tensor<4x4xf32>) -> " + NN_T +
                                    "\n  return %0 : " + NN_T,
                                    pre="nn.parameter @w : tensor<4x5xf32> "
                                    "init zeros\n"), "error",
                                ["@w", "tensor<4x5xf32>"]),
        "param-duplicate": (fwd(relu, pre="nn.parameter @w : tensor<4xf32> "
                                "init zeros\nnn.parameter @w : tensor<4xf32> "
                                "init ones\n"), "error", ["@w", "w"]),
        "param-init-nan": (fwd("  %w = nn.param @w : tensor<4x4xf32>\n"
                               "  %0 = nn.matmul %x, %w : (" + NN_T +
                               ", tensor<4x4xf32>) -> " + NN_T +
                               "\n  return %0 : " + NN_T,
                               pre="nn.parameter @w : tensor<4x4xf32> init "
                               "normal(0x7FF8000000000000)\n"), "error",
                           ["@w", "nan", "scale"]),
        "param-init-negative": (fwd("  %w = nn.param @w : tensor<4x4xf32>\n"
                                    "  %0 = nn.matmul %x, %w : (" + NN_T +
                                    ", tensor<4x4xf32>) -> " + NN_T +
                                    "\n  return %0 : " + NN_T,
                                    pre="nn.parameter @w : tensor<4x4xf32> "
                                    "init uniform(-1.0)\n"), "any",
                                ["@w", "scale"]),
        "param-value-type-mismatch": (fwd(relu, pre="nn.parameter @w : "
                                          "tensor<4xf32> = dense<1.0> : "
                                          "tensor<5xf32>\n"), "error",
                                      ["@w", "tensor<5xf32>"]),
        "param-missing-resource": (fwd(relu, pre="nn.parameter @w : "
                                       "tensor<4xf32> = dense_resource<blob> "
                                       ": tensor<4xf32>\n"), "any",
                                   ["blob", "@w"]),
        "param-i64-weight": (fwd("  %w = nn.param @w : tensor<4x4xi64>\n"
                                 "  %0 = nn.matmul %x, %w : (" + NN_T +
                                 ", tensor<4x4xi64>) -> " + NN_T +
                                 "\n  return %0 : " + NN_T,
                                 pre="nn.parameter @w : tensor<4x4xi64> "
                                 "init zeros\n"), "error",
                             ["i64", "nn.matmul"]),
        "param-empty-name": (fwd(relu, pre='nn.parameter @"" : tensor<4xf32> '
                                 "init zeros\n"), "any", ['@""', "name"]),
        "conv-ok": (conv("{" + win + "}"), "ok", []),
        "conv-stride-zero": (conv("{strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}"), "error", ["stride"]),
        "conv-stride-negative": (conv("{strides = array<i64: -1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}"), "error", ["stride"]),
        "conv-stride-short": (conv("{strides = array<i64: 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}"), "error", ["stride"]),
        "conv-pads-negative": (conv("{strides = array<i64: 1, 1>, pads = array<i64: -1, 0, 0, 0>, dilations = array<i64: 1, 1>}"), "error", ["pad"]),
        "conv-dilation-zero": (conv("{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 0, 1>}"), "error", ["dilation"]),
        "conv-groups-zero": (conv("{" + win + ", groups = 0}"), "error",
                             ["group"]),
        "conv-groups-three": (conv("{" + win + ", groups = 3}"), "error",
                              ["group"]),
        "conv-result-type": (conv("{" + win + "}", out="tensor<2x3x5x5xf32>"),
                             "error", ["tensor<2x3x5x5xf32>", "result"]),
        "conv-kernel-larger": (conv("{" + win + "}", w="tensor<3x2x9x9xf32>",
                                    out="tensor<2x3x1x1xf32>"), "error",
                               ["kernel", "nn.conv2d", "input"]),
        "maxpool-ok": (pool("max_pool2d", "{kernel = array<i64: 2, 2>, " + win
                            + "}", "tensor<2x2x5x5xf32>"), "ok", []),
        "maxpool-kernel-zero": (pool("max_pool2d", "{kernel = array<i64: 0, 2>, " + win + "}", "tensor<2x2x7x5xf32>"), "error", ["kernel"]),
        "maxpool-pads-past-kernel": (pool("max_pool2d", "{kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>}", "tensor<2x2x11x11xf32>"), "error", ["pad", "kernel"]),
        "maxpool-ceil-wrong-type": (pool("max_pool2d", "{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true}", "tensor<2x2x2x2xf32>"), "error", ["tensor<2x2x2x2xf32>", "result"]),
        "avgpool-pads-past-kernel": (pool("avg_pool2d", "{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>}", "tensor<2x2x6x6xf32>"), "error", ["pad", "kernel"]),
        "avgpool-stride-zero": (pool("avg_pool2d", "{kernel = array<i64: 2, 2>, strides = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>}", "tensor<2x2x5x5xf32>"), "error", ["stride"]),
        "batchnorm-epsilon-negative": (fwd("  %g = nn.param @g : tensor<2xf32>\n  %0 = nn.batch_norm %x, %g, %g, %g, %g {epsilon = -1.0 : f32} : (" + img + ", tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> " + img + "\n  return %0 : " + img, img, img, "nn.parameter @g : tensor<2xf32> init ones\n"), "error", ["epsilon"]),
        "batchnorm-momentum-two": (fwd("  %g = nn.param @g : tensor<2xf32>\n  %m = nn.param @m : tensor<2xf32>\n  %0 = nn.batch_norm %x, %g, %g, %m, %g {momentum = 2.0 : f32} : (" + img + ", tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> " + img + "\n  return %0 : " + img, img, img, "nn.parameter @g : tensor<2xf32> init ones\nnn.parameter @m : tensor<2xf32> init zeros\n"), "error", ["momentum"]),
        "batchnorm-shared-stats": (fwd("  %g = nn.param @g : tensor<2xf32>\n  %0 = nn.batch_norm %x, %g, %g, %g, %g : (" + img + ", tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> " + img + "\n  return %0 : " + img, img, img, "nn.parameter @g : tensor<2xf32> init ones\n"), "error", ["@g", "running"]),
        "dropout-ratio-one": (fwd("  %0 = nn.dropout %x {ratio = 1.0 : f32} : " + NN_T + "\n  return %0 : " + NN_T), "error", ["ratio"]),
        "dropout-ratio-negative": (fwd("  %0 = nn.dropout %x {ratio = -0.5 : f32} : " + NN_T + "\n  return %0 : " + NN_T), "error", ["ratio"]),
        "softmax-axis-range": (fwd("  %0 = nn.softmax %x {axis = 5 : i64} : " + NN_T + "\n  return %0 : " + NN_T), "error", ["axis"]),
        "transpose-perm-dup": (fwd("  %0 = nn.transpose %x {perm = array<i64: 0, 0>} : " + NN_T + " -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>", NN_T, "tensor<8x8xf32>"), "error", ["perm"]),
        "reshape-count": (fwd("  %0 = nn.reshape %x : " + NN_T + " -> tensor<5x7xf32>\n  return %0 : tensor<5x7xf32>", NN_T, "tensor<5x7xf32>"), "error", ["tensor<5x7xf32>", "element"]),
        "layer-wrong-args": (fwd('  %0 = nn.layer "l"(%x) : (' + NN_T + ") -> " + NN_T + " {\n  ^bb0(%a: " + NN_T + ", %b: " + NN_T + "):\n    nn.yield %a : " + NN_T + "\n  }\n  return %0 : " + NN_T), "error", ["nn.layer", "argument"]),
        "layer-yield-type": (fwd('  %0 = nn.layer "l"(%x) : (' + NN_T + ") -> " + NN_T + " {\n  ^bb0(%a: " + NN_T + "):\n    %r = nn.reshape %a : " + NN_T + " -> tensor<4x8xf32>\n    nn.yield %r : tensor<4x8xf32>\n  }\n  return %0 : " + NN_T), "error", ["nn.yield", "tensor<4x8xf32>", "type"]),
        "layer-outside-use": (fwd('  %c = nn.relu %x : ' + NN_T + '\n  %0 = nn.layer "l"(%x) : (' + NN_T + ") -> " + NN_T + " {\n  ^bb0(%a: " + NN_T + "):\n    nn.yield %c : " + NN_T + "\n  }\n  return %0 : " + NN_T), "error", ["%c", "isolated", "above", "region"]),
        "unterminated-string": ('nn.parameter @"abc : tensor<4xf32> init zeros\n', "error", ["string"]),
        "cross-entropy-one-class": (fwd("  %0 = nn.reshape %x : " + NN_T + " -> tensor<32x1xf32>\n  return %0 : tensor<32x1xf32>", NN_T, "tensor<32x1xf32>"), "error", ["class"]),
    }
    for name, (text, expect, names) in texts.items():
        f = os.path.join(m, name + ".mlir")
        with open(f, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        if expect != "ok":
            add(Case("mlir", name + "@opt", ["gpipe-opt", f, "-o", "-"],
                     "any" if name.startswith(("empty", "no-forward",
                                               "two-forwards",
                                               "forward-", "cross-entropy",
                                               "param-init-negative",
                                               "param-empty-name",
                                               "layer-outside",
                                               "batchnorm-shared",
                                               "float-literal",
                                               "param-missing")) else expect,
                     names))
        add(Case("mlir", name + "@compile",
                 ["gpipe-compile", f, "--stages", "1", "--quiet", "-o",
                  os.path.join(m, name + ".so")], expect, names))
    # Bytecode: whole, truncated, a byte changed.
    bc = os.path.join(m, "model.mlirbc")
    subprocess.run([d.tool("gpipe-import")] + PRESET_MLP +
                   ["--emit-bytecode", "-o", bc], check=True)
    data = open(bc, "rb").read()
    add(Case("mlir", "bytecode-ok", ["gpipe-compile", bc, "--quiet", "-o",
                                     os.path.join(m, "bc.so")], "ok"))
    for pct in (5, 30, 60, 90, 99):
        f = os.path.join(m, "bc-cut-%d.mlirbc" % pct)
        open(f, "wb").write(data[:len(data) * pct // 100])
        add(Case("mlir", "bytecode-truncated-%d" % pct,
                 ["gpipe-compile", f, "--quiet", "-o",
                  os.path.join(m, "bc.so")], "error",
                 ["bytecode", os.path.basename(f)]))
    rng = random.Random(3)
    for i in range(6):
        b = bytearray(data)
        for _ in range(4):
            at = rng.randrange(8, len(b))
            b[at] ^= 1 << rng.randrange(8)
        f = os.path.join(m, "bc-flip-%d.mlirbc" % i)
        open(f, "wb").write(bytes(b))
        add(Case("mlir", "bytecode-bitflip-%d" % i,
                 ["gpipe-compile", f, "--quiet", "-o",
                  os.path.join(m, "bc.so")], "any",
                 ["bytecode", os.path.basename(f), "error"]))
    # Deep nesting: past the limit, and just under it.
    for label, depth, expect in (("deep-1500", 1500, "error"),
                                 ("deep-array-5000", 5000, "error")):
        f = os.path.join(m, label + ".mlir")
        if "array" in label:
            text = ("module attributes {x.a = " + "[" * depth + "1" +
                    "]" * depth + "} {}\n")
        else:
            lines = ["func.func @forward(%x: tensor<2x4xf32>) -> "
                     "tensor<2x4xf32> {"]
            v = "%x"
            for i in range(depth):
                lines.append('%%l%d = nn.layer "%d"(%s) : (tensor<2x4xf32>) '
                             '-> tensor<2x4xf32> {' % (i, i, v))
                lines.append("^bb0(%%a%d: tensor<2x4xf32>):" % i)
                v = "%%a%d" % i
            for i in reversed(range(depth)):
                lines.append("nn.yield %s : tensor<2x4xf32>" % v)
                lines.append("}")
                v = "%%l%d" % i
            lines += ["return %s : tensor<2x4xf32>" % v, "}"]
            text = "\n".join(lines) + "\n"
        open(f, "w").write(text)
        add(Case("mlir", label, ["gpipe-opt", f, "-o", "@NULL@"], expect,
                 ["nests more than"]))
    # gpipe-opt reading standard input, and passes on the MLP.
    mlp = d.path("base", "mlp.mlir")
    add(Case("mlir", "stdin-garbage", ["gpipe-opt", "-"], "error",
             ["<stdin>"], stdin=os.path.join(m, "garbage.mlir")))
    for opts, expect, names in (
            ("stages=0", "error", ["stages", "0"]),
            ("stages=-3", "error", ["stages", "-3"]),
            ("stages=100", "error", ["stages", "100", "layers"]),
            ("microbatches=0", "error", ["microbatches", "0"]),
            ("microbatches=3", "error", ["micro-batches", "3"]),
            ("stages=abc", "error", ["abc", "stages"]),
            ("stages=2 bogus=1", "error", ["bogus"]),
            ("stages=2 schedule=zigzag", "error", ["zigzag"]),
            ("stages=2 virtual-stages=-1", "error", ["virtual", "-1"]),
            ("stages=2 balance=3,-1", "error", ["balance", "-1"]),
            ("stages=2 memory-budget=1B", "error", ["budget", "1 B"]),
            ("stages=2 memory-budget=lots", "error", ["lots"]),
            ("stages=2 data-parallel=0", "error", ["data-parallel", "0"]),
            ("stages=2 schedule-file=/nonexistent.csv", "error",
             ["nonexistent.csv"])):
        add(Case("mlir", "pipeline-" + opts.replace(" ", "_"),
                 ["gpipe-opt", mlp, "--gpipe-pipeline=" + opts, "-o",
                  "@NULL@"], expect, names))
    add(Case("mlir", "pass-pipeline-unbalanced",
             ["gpipe-opt", mlp, "--pass-pipeline=builtin.module(gpipe-pipeline{stages=2",
              "-o", "@NULL@"], "error", ["pipeline", "{", "'}'"]))
    add(Case("mlir", "export-trace-missing-dir",
             ["gpipe-opt", mlp, "--gpipe-pipeline=stages=2",
              "--gpipe-export-trace=file=/nonexistent/dir/t.json", "-o",
              "@NULL@"], "error", ["/nonexistent/dir"]))
    add(Case("mlir", "export-trace-on-nn",
             ["gpipe-opt", mlp, "--gpipe-export-trace=file=" +
              os.path.join(m, "t.json"), "-o", "@NULL@"], "any",
             ["pipeline"]))
    add(Case("mlir", "schedule-on-nn",
             ["gpipe-opt", mlp, "--gpipe-schedule", "--gpipe-plan-memory",
              "--convert-gpipe-to-rt", "-o", "@NULL@"], "any",
             ["pipeline"]))
    add(Case("mlir", "differentiate-twice",
             ["gpipe-opt", mlp, "--nn-attach-loss", "--nn-differentiate",
              "--nn-differentiate", "-o", "@NULL@"], "any", ["gradient"]))
    add(Case("mlir", "microbatch-twice",
             ["gpipe-opt", mlp, "--nn-microbatch=microbatches=2",
              "--nn-microbatch=microbatches=2", "-o", "@NULL@"], "any",
             ["micro"]))
    add(Case("mlir", "microbatch-zero",
             ["gpipe-opt", mlp, "--nn-microbatch=microbatches=0", "-o",
              "@NULL@"], "error", ["microbatches", "0"]))
    add(Case("mlir", "plan-memory-on-nn",
             ["gpipe-opt", mlp, "--gpipe-plan-memory", "--gpipe-plan-report",
              "-o", "@NULL@"], "any", ["pipeline"]))


def corpus_family(d, add):
    """Every case of the dialect tests, compiled whole: what a pass was
    never shown must still end in success or a clean error."""
    root = os.path.join(ROOT, "test", "Dialect")
    out = d.path("corpus")
    os.makedirs(out, exist_ok=True)
    files = []
    for dirpath, _, names in os.walk(root):
        if "Inputs" in dirpath:
            continue
        files += [os.path.join(dirpath, n) for n in sorted(names)
                  if n.endswith(".mlir")]
    for path in sorted(files):
        pieces = open(path).read().split("\n// -----\n")
        for i, piece in enumerate(pieces):
            if "func.func @forward" not in piece and \
                    "gpipe.pipeline" not in piece:
                continue
            rel = os.path.relpath(path, root).replace("/", "-")[:-5]
            f = os.path.join(out, "%s-%d.mlir" % (rel, i))
            open(f, "w").write(piece)
            add(Case("corpus", "%s#%d" % (rel, i),
                     ["gpipe-compile", f, "--stages", "2", "--microbatches",
                      "2", "--quiet", "-o", f[:-5] + ".so"], "any",
                     ["%s-%d.mlir:" % (rel, i), "gpipe-compile: error"]))


def flags_family(d, add):
    mlp, out = so(d, "mlp"), d.path("flags")
    os.makedirs(out, exist_ok=True)
    o = os.path.join(out, "m.so")
    imp = lambda *a: ["gpipe-import"] + list(a) + ["-o", "@NULL@"]
    comp = lambda *a: ["gpipe-compile"] + list(a) + ["--quiet", "-o", o]

    def F(name, cmd, expect="error", names=(), **kw):
        add(Case("flags", name, cmd, expect, names, **kw))
    F("import-nothing", ["gpipe-import"], "error", ["model", "preset"])
    F("import-preset-unknown", imp("--preset", "vgg"), "error", ["vgg"])
    F("import-file-and-preset", imp(os.path.join(INPUTS, "mlp.onnx"),
                                    "--preset", "mlp"), "error",
      ["preset", "mlp.onnx"])
    for flag, values in (("--depth", ["0", "-1", "1000000000000",
                                      "99999999999999999999", "x"]),
                         ("--width", ["0", "-8", "3000000000"]),
                         ("--batch", ["0", "-4"]),
                         ("--in-features", ["0"]), ("--classes", ["0", "-3"])):
        for v in values:
            F("mlp%s=%s" % (flag, v), imp(*(PRESET_MLP + [flag, v])),
              "error", [flag.lstrip("-"), v])
    for flag, v, expect in (("--heads", "3", "error"), ("--heads", "0", "error"),
                            ("--seq-len", "0", "error"),
                            ("--vocab", "1", "error"), ("--vocab", "0", "error"),
                            ("--heads", "32", "error"),
                            ("--seq-len", "100000000", "any")):
        F("gpt%s=%s" % (flag, v), comp(*(PRESET_GPT + [flag, v])), expect,
          [flag.lstrip("-"), v, "class"])
    for v, expect in (("0", "error"), ("1", "any"), ("2", "any"),
                      ("3", "any"), ("7", "any"), ("-5", "error"),
                      ("100000", "any"), ("4.5", "error")):
        F("resnet--image-size=%s" % v,
          comp(*(PRESET_RESNET + ["--image-size", v])), expect,
          ["image-size", v])
    for v, expect in (("1", "error"), ("0", "error"), ("1000", "any")):
        F("resnet--classes=%s" % v, comp(*(PRESET_RESNET + ["--classes", v])),
          expect, ["classes", v])
    F("resnet--width=1", comp(*(PRESET_RESNET + ["--width", "1"])), "any",
      ["width"])
    F("resnet--depth=12-tiny-image", comp(*(PRESET_RESNET +
                                            ["--depth", "12",
                                             "--image-size", "2"])),
      "any", ["image", "depth"])
    F("resnet--batch=1", comp(*(PRESET_RESNET + ["--batch", "1"])), "any",
      ["batch"])
    F("resnet--heads", comp(*(PRESET_RESNET + ["--heads", "2"])), "error",
      ["--heads"])
    F("resnet--in-features", comp(*(PRESET_RESNET + ["--in-features", "3"])),
      "error", ["--in-features"])
    F("mlp--image-size", comp(*(PRESET_MLP + ["--image-size", "8"])),
      "error", ["--image-size"])
    F("import--dim-negative", imp(os.path.join(INPUTS, "dynamic_dim.onnx"),
                                  "--dim", "batch=-1"), "error",
      ["batch", "-1"])
    F("import--dim-zero", imp(os.path.join(INPUTS, "dynamic_dim.onnx"),
                              "--dim", "batch=0"), "error", ["batch", "0"])
    F("import--dim-text", imp(os.path.join(INPUTS, "dynamic_dim.onnx"),
                              "--dim", "batch=abc"), "error", ["abc"])
    F("import--dim-no-name", imp(os.path.join(INPUTS, "dynamic_dim.onnx"),
                                 "--dim", "=5"), "error", ["--dim", "=5"])
    F("import--dim-no-size", imp(os.path.join(INPUTS, "dynamic_dim.onnx"),
                                 "--dim", "batch"), "error", ["batch"])
    F("import--dim-huge", imp(os.path.join(INPUTS, "dynamic_dim.onnx"),
                              "--dim", "batch=99999999999999999999"), "error",
      ["99999999999999999999", "batch"])
    F("import--dim-unused", imp(os.path.join(INPUTS, "mlp.onnx"), "--dim",
                                "batch=4"), "any", ["batch"])
    F("import--dim-twice", imp(os.path.join(INPUTS, "dynamic_dim.onnx"),
                               "--dim", "batch=4", "--dim", "batch=8"),
      "any", ["batch"])
    F("import-o-missing-dir", ["gpipe-import"] + PRESET_MLP +
      ["-o", "/nonexistent/x.mlir"], "error", ["/nonexistent"])
    F("import-o-directory", ["gpipe-import"] + PRESET_MLP + ["-o", out],
      "error", [out])
    # gpipe-compile.
    for flag, v, names in (("--stages", "0", None), ("--stages", "-1", None),
                           ("--stages", "100", ["layers"]),
                           ("--stages", "4611686018427387904", None),
                           ("--microbatches", "0", None),
                           ("--microbatches", "3", ["divisible"]),
                           ("--microbatches", "-2", None),
                           ("--microbatches", "16", None),
                           ("--microbatches", "1000000", None),
                           ("--virtual-stages", "-1", None),
                           ("--virtual-stages", "100", None),
                           ("--data-parallel", "0", None),
                           ("--data-parallel", "3", None),
                           ("--data-parallel", "16", None),
                           ("--data-parallel", "-2", None),
                           ("--schedule", "bogus", None),
                           ("--remat", "bogus", None),
                           ("--optimizer", "rmsprop", None),
                           ("--loss", "hinge", None),
                           ("--target", "tpu", None),
                           ("--precision", "fp8", None),
                           ("--emit", "exe", None),
                           ("--profile", "a100", None),
                           ("--granularity", "atom", None),
                           ("--memory-budget", "-5", None),
                           ("--memory-budget", "0", None),
                           ("--memory-budget", "1B", ["budget", "1 B"]),
                           ("--memory-budget", "10QiB", None),
                           ("--memory-budget", "99999999999999999999GiB",
                            None),
                           ("--memory-budget", "1e3MiB", None),
                           ("--memory-budget", "512 MiB", ["512"]),
                           ("--memory-budget", "nan", None),
                           ("--balance", "1,1", ["balance"]),
                           ("--balance", "0,4", None),
                           ("--balance", "-1,5", None),
                           ("--balance", "a,b", None),
                           ("--balance", "100,100", None)):
        extra = ["--stages", "2"] if flag in ("--balance",
                                              "--virtual-stages") else []
        F("compile%s=%s" % (flag, v), comp(*(PRESET_MLP + extra +
                                             [flag, v])),
          "error" if not (flag == "--memory-budget" and
                          v in ("99999999999999999999GiB", "1e3MiB",
                                "512 MiB")) else "any",
          names or [flag.lstrip("-"), v])
    F("compile--memory-budget-huge-ok", comp(*(PRESET_MLP +
                                              ["--memory-budget", "1TiB"])),
      "ok")
    F("compile--stages-twice", comp(*(PRESET_MLP + ["--stages", "2",
                                                     "--stages", "3"])),
      "any", ["stages"])
    F("compile--schedule-zbv-v3", comp(*(PRESET_MLP + [
        "--stages", "2", "--schedule", "zbv", "--virtual-stages", "3"])),
      "error", ["virtual", "zbv", "3"])
    F("compile--schedule-file-missing", comp(*(PRESET_MLP + [
        "--stages", "2", "--schedule-file", "/nonexistent.csv"])), "error",
      ["/nonexistent.csv"])
    csvs = {"empty": "", "garbage": "hello,world\n\x00\x01",
            "wrong-ranks": "0F0,0F1,0B0,0B1\n",
            "bad-cell": "0F0,0X1\n1F0,1B0\n",
            "huge-mb": "0F99999999999999999999\n1F0\n",
            "missing-backward": "0F0,0F1\n1F0,1F1\n"}
    for label, text in csvs.items():
        f = os.path.join(out, label + ".csv")
        open(f, "w").write(text)
        F("compile--schedule-file-" + label, comp(*(PRESET_MLP + [
            "--stages", "2", "--microbatches", "2", "--schedule-file", f])),
          "error", [label + ".csv"])
    F("compile--loss-mse-gpt", comp(*(PRESET_GPT + ["--loss", "mse"])),
      "any", ["mse"])
    F("compile--target-cuda", comp(*(PRESET_MLP + ["--target", "cuda"])),
      "any", ["cuda"])
    F("compile--emit-so-stdout", ["gpipe-compile"] + PRESET_MLP +
      ["-o", "-"], "error", ["standard output"])
    F("compile--emit-obj-no-o", ["gpipe-compile"] + PRESET_MLP +
      ["--emit", "obj"], "error", ["-o"])
    F("compile-o-missing-dir", ["gpipe-compile"] + PRESET_MLP +
      ["--quiet", "-o", "/nonexistent/m.so"], "error", ["/nonexistent"])
    F("compile-o-directory", ["gpipe-compile"] + PRESET_MLP +
      ["--quiet", "-o", out], "error", [out])
    keep = os.path.join(out, "keep.so")
    shutil.copy(mlp, keep)
    F("compile-fails-keeps-old-output", ["gpipe-compile"] + PRESET_MLP +
      ["--stages", "100", "--quiet", "-o", keep], "error", ["stages"],
      check=unchanged(keep))
    # Outputs that are not plain files: a device (like /dev/null), a
    # symbolic link to a file.
    for label, cmd in (
            ("compile-o-device", ["gpipe-compile"] + PRESET_MLP +
             ["--quiet", "-o", "@NULL@"]),
            ("compile-obj-o-device", ["gpipe-compile"] + PRESET_MLP +
             ["--emit", "obj", "--quiet", "-o", "@NULL@"]),
            ("import-o-device", ["gpipe-import"] + PRESET_MLP +
             ["-o", "@NULL@"]),
            ("run-save-params-device", ["gpipe-run", mlp, "--steps", "1",
                                        "--quiet", "--save-params",
                                        "@NULL@"]),
            ("run-save-grads-device", ["gpipe-run", mlp, "--steps", "1",
                                       "--quiet", "--save-grads", "@NULL@"]),
            ("run-trace-device", ["gpipe-run", mlp, "--steps", "1",
                                  "--quiet", "--trace", "@NULL@"])):
        F(label, cmd, "ok")
    F("opt-fails-o-device", ["gpipe-opt", os.path.join(INPUTS, "README.md"),
                             "-o", "@NULL@"], "error", ["README.md"])
    target = os.path.join(out, "target.so")
    link = os.path.join(out, "link.so")

    def make_link():
        for p in (target, link):
            if os.path.lexists(p):
                os.remove(p)
        open(target, "w").write("old")
        os.symlink("target.so", link)

    def link_kept(res):
        if not os.path.islink(link):
            return "the symbolic link given as -o was replaced by a file"
        if open(target, "rb").read(4) != b"\x7fELF":
            return "the link's target was not written"
        return None
    F("compile-o-symlink", ["gpipe-compile"] + PRESET_MLP +
      ["--quiet", "-o", link], "ok", setup=make_link, check=link_kept)
    F("compile-nothing", ["gpipe-compile", "-o", o], "error",
      ["model", "preset"])
    F("compile-unknown-flag", comp(*(PRESET_MLP + ["--frobnicate"])), "error",
      ["frobnicate"])
    F("compile-missing-value", ["gpipe-compile"] + PRESET_MLP + ["--stages"],
      "error", ["stages"])
    F("compile-missing-file", comp("/nonexistent/model.onnx"), "error",
      ["/nonexistent/model.onnx"])
    F("compile-unknown-extension", comp(os.path.join(INPUTS, "README.md")),
      "error", ["README.md"])
    F("compile-directory-input", comp(INPUTS), "error", [INPUTS])
    # gpipe-run.
    run = lambda *a: ["gpipe-run", mlp, "--steps", "1", "--quiet"] + list(a)
    for flag, v in (("--steps", "0"), ("--steps", "-1"),
                    ("--steps", "99999999999999999999"), ("--lr", "nan"),
                    ("--lr", "inf"), ("--lr", "abc"), ("--momentum", "nan"),
                    ("--weight-decay", "inf"), ("--seed", "-1"),
                    ("--seed", "99999999999999999999"), ("--timeout", "0"),
                    ("--timeout", "-1"), ("--timeout", "nan"),
                    ("--transport", "carrier-pigeon"), ("--gpu", "-1"),
                    ("--checkpoint-every", "0"), ("--keep-checkpoints", "0"),
                    ("--on-nonfinite", "ignore"), ("--optimizer", "lbfgs"),
                    ("--inject-fault", "garbage"),
                    ("--inject-fault", "rank=-1"),
                    ("--inject-fault", "rank=0,mode=explode"),
                    ("--inject-nan", "step=1"), ("--inject-nan", "rank=x"),
                    ("--data", "")):
        F("run%s=%s" % (flag, v), run(flag, v), "error",
          [flag, v if v else "data", v.replace("=", " ")])
    F("run-nothing", ["gpipe-run"], "error", ["model"])
    F("run-unknown-flag", run("--frobnicate"), "error", ["--frobnicate"])
    F("run-missing-value", ["gpipe-run", mlp, "--steps"], "error",
      ["--steps"])
    F("run-two-models", ["gpipe-run", mlp, mlp], "error", ["more than one"])
    F("run--quiet=1", run("--quiet=1"), "error", ["--quiet"])
    F("run--resume-no-dir", run("--resume"), "error", ["--checkpoint-dir"])
    F("run--keep-no-dir", run("--keep-checkpoints", "2"), "error",
      ["--checkpoint-dir"])
    F("run--timeout-huge", run("--timeout", "1e300"), "error",
      ["--timeout", "1e300"])
    F("run--timeout-day", run("--timeout", "86400"), "ok")
    F("run--timeout-tiny", run("--timeout", "1e-9"), "any", ["timeout",
                                                            "rank"])
    F("run--lr-huge", ["gpipe-run", mlp, "--steps", "3", "--quiet", "--lr",
                       "1e30"], "any", ["nan", "inf", "non-finite"])
    F("run--lr-negative", run("--lr", "-0.1"), "any", ["--lr"])
    F("run--momentum-two", run("--momentum", "2"), "any", ["--momentum"])
    F("run--momentum-on-sgd", run("--momentum", "0.5"), "any",
      ["momentum"])
    F("run--weight-decay-negative", run("--weight-decay", "-1"), "any",
      ["--weight-decay"])
    F("run--steps-twice", run("--steps", "2"), "any", ["--steps"])
    F("run--optimizer-momentum-on-sgd-plan", run("--optimizer", "momentum"),
      "error", ["momentum"])
    F("run--gpu-cpu-model", run("--gpu", "0"), "error", ["--gpu"])
    F("run--transport-nccl-cpu", run("--transport", "nccl"), "error",
      ["nccl"], timeout=30)
    F("run--save-params-missing-dir", run("--save-params", "/nonexistent/p.st"),
      "error", ["/nonexistent"])
    F("run--save-params-directory", run("--save-params", out), "error",
      [out])
    F("run--trace-missing-dir", run("--trace", "/nonexistent/t.json"),
      "error", ["/nonexistent"])
    F("run--checkpoint-dir-is-file", run("--checkpoint-dir", mlp), "error",
      [mlp])
    F("run--inject-fault-rank-too-high", run("--inject-fault",
                                             "rank=7,step=1,action=0"),
      "error", ["rank", "7"])
    F("run--inject-nan-rank-too-high", run("--inject-nan", "rank=9,step=1"),
      "error", ["rank", "9"])
    F("run--inject-fault-step-never", run("--inject-fault",
                                          "rank=0,step=50,action=0"),
      "any", ["step", "50"])
    F("run--inject-fault-action-past", run("--inject-fault",
                                           "rank=0,step=1,action=999"),
      "any", ["action", "999"])
    F("run--inject-nan-mb-past", run("--inject-nan", "rank=1,step=1,mb=99"),
      "any", ["mb", "99", "micro"])
    F("run--inject-fault-replica-no-dp", run("--inject-fault",
                                             "rank=0,replica=1,step=1"),
      "error", ["replica", "1"])
    F("run-adam-plan-sgd", ["gpipe-run", so(d, "mlp-adam"), "--steps", "1",
                            "--quiet", "--optimizer", "sgd"], "any",
      ["sgd", "adam"])
    F("run-emulate-device-resnet", ["gpipe-run", so(d, "resnet"), "--steps",
                                    "1", "--quiet", "--emulate-device"],
      "ok")


def data_family(d, add):
    mlp, out = so(d, "mlp"), d.path("data")
    os.makedirs(out, exist_ok=True)

    def D(name, writer, expect="error", names=None, model=None, extra=()):
        f = os.path.join(out, name + ".st")
        if writer is not None:
            writer(f)
        add(Case("data", name, ["gpipe-run", model or mlp, "--steps", "2",
                                 "--quiet", "--data", f] + list(extra),
                 expect, names or [name + ".st"], check=unchanged(f)))

    def raw(data):
        return lambda f: open(f, "wb").write(data)
    x16 = f32([0.5] * 64)
    y16 = i64([1] * 16)
    good = {"input": ("F32", [16, 4], x16), "labels": ("I64", [16], y16)}

    def st(tensors=None, **kw):
        return lambda f: write_safetensors(f, dict(tensors or good), **kw)
    D("empty", raw(b""))
    D("seven-bytes", raw(b"\x10\0\0\0\0\0\0"))
    D("header-huge", raw(struct.pack("<Q", 1 << 62) + b"{}"))
    D("header-past-end", raw(struct.pack("<Q", 4096) + b"{}      "))
    D("header-not-json", raw(struct.pack("<Q", 8) + b"not json"))
    D("header-array", raw(struct.pack("<Q", 8) + b"[1,2,3] "))
    D("header-nul", raw(struct.pack("<Q", 8) + b"{\0\0\0\0\0\0}"))
    D("header-deep", raw(struct.pack("<Q", 200000) + b"[" * 100000 +
                         b"]" * 100000))
    for dtype in ("U8", "BOOL", "I32", "XYZ"):
        D("input-dtype-" + dtype, st({"input": (dtype, [16, 4],
                                               b"\0" * (16 * 4 * (
                                                   8 if dtype in ("F64",)
                                                   else 4 if dtype in (
                                                       "I32", "XYZ")
                                                   else 2 if dtype in (
                                                       "F16", "BF16")
                                                   else 1))),
                                      "labels": good["labels"]}),
          "error", ["input", dtype])
    for dtype, width in (("F16", 2), ("BF16", 2), ("F64", 8)):
        D("input-dtype-" + dtype, st({"input": (dtype, [16, 4],
                                               b"\0" * (64 * width)),
                                      "labels": good["labels"]}), "ok")
    D("labels-f32", st({"input": good["input"],
                        "labels": ("F32", [16], f32([1.0] * 16))}), "error",
      ["labels", "F32"])
    D("labels-2d", st({"input": good["input"],
                       "labels": ("I64", [16, 1], y16)}), "error",
      ["labels", "[16, 1]"])
    D("labels-negative", st({"input": good["input"],
                             "labels": ("I64", [16], i64([-1] * 16))}),
      "error", ["label", "-1"])
    D("labels-huge", st({"input": good["input"],
                         "labels": ("I64", [16], i64([1 << 62] * 16))}),
      "error", ["label", str(1 << 62)])
    D("samples-differ", st({"input": good["input"],
                            "labels": ("I64", [12], i64([1] * 12))}),
      "error", ["16", "12"])
    D("input-rank-3", st({"input": ("F32", [16, 2, 2], x16),
                          "labels": good["labels"]}), "error",
      ["input", "[16, 2, 2]"])
    D("input-features", st({"input": ("F32", [8, 8], x16),
                            "labels": ("I64", [8], i64([1] * 8))}), "error",
      ["input", "[8, 8]"])
    D("shape-negative", st({"input": ("F32", [-16, 4], x16),
                            "labels": good["labels"]}), "error",
      ["input", "-16", "shape"])
    D("shape-overflow", st({"input": ("F32", [1 << 40, 1 << 40], x16),
                            "labels": good["labels"]}), "error",
      ["input", str(1 << 40)])
    D("offsets-past-end", st(header_extra={"input": {"data_offsets":
                                                     [0, 1 << 40]}}),
      "error", ["input", "offset"])
    D("offsets-reversed", st(header_extra={"input": {"data_offsets":
                                                     [256, 0]}}),
      "error", ["input", "offset"])
    D("offsets-overlap", st(header_extra={"labels": {"data_offsets":
                                                     [0, 128]}}),
      "any", ["labels", "offset"])
    D("offsets-size-mismatch", st(header_extra={"input": {"data_offsets":
                                                          [0, 100]}}),
      "error", ["input"])
    D("offsets-missing", st(header_extra={"input": {"data_offsets": None}}),
      "error", ["input", "data_offsets"])
    D("shape-string", st(header_extra={"input": {"shape": "16x4"}}),
      "error", ["input", "shape"])
    D("metadata-not-strings", st(metadata={"a": 1, "b": [1, 2]}), "any",
      ["__metadata__"])
    D("duplicate-keys", raw((lambda h: struct.pack("<Q", len(h)) + h +
                             x16 + y16)(
        (b'{"input":{"dtype":"F32","shape":[16,4],"data_offsets":[0,256]},'
         b'"input":{"dtype":"F32","shape":[16,4],"data_offsets":[0,256]},'
         b'"labels":{"dtype":"I64","shape":[16],"data_offsets":[256,384]}}'
         ).ljust(200))), "any", ["input"])
    D("missing", None, "error", ["missing.st"])
    D("too-few", lambda f: mlp_data(f, 5), "error", ["5 samples"])
    D("inf-input", st({"input": ("F32", [16, 4], f32([float("inf")] * 64)),
                       "labels": good["labels"]}), "error", ["inf"])
    D("nan-labels-as-f32-bits", st({"input": good["input"],
                                    "labels": ("I64", [16],
                                               f32([float("nan")] * 32))}),
      "error", ["label"])
    D("huge-but-finite", st({"input": ("F32", [16, 4], f32([3e38] * 64)),
                             "labels": good["labels"]}), "any",
      ["nan", "inf", "non-finite"])
    D("mlp-data-on-gpt", lambda f: mlp_data(f, 16), "error", ["input"],
      model=so(d, "gpt"))
    # GPT tokens: ids outside the vocabulary, negative ids.
    def tokens(ids, labels=None):
        def w(f):
            write_safetensors(f, {
                "input": ("I64", [4, 8], i64(ids)),
                "labels": ("I64", [4, 8], i64(labels or [1] * 32))})
        return w
    D("gpt-token-past-vocab", tokens([1] * 31 + [16]), "error",
      ["16", "token", "vocab", "input"], model=so(d, "gpt"))
    D("gpt-token-huge", tokens([1] * 31 + [1 << 40]), "error",
      [str(1 << 40), "token", "input"], model=so(d, "gpt"))
    D("gpt-token-negative", tokens([-1] + [1] * 31), "error",
      ["-1", "token", "input"], model=so(d, "gpt"))
    D("gpt-label-past-vocab", tokens([1] * 32, [1] * 31 + [16]), "error",
      ["label", "16"], model=so(d, "gpt"))
    D("gpt-input-f32", lambda f: write_safetensors(f, {
        "input": ("F32", [4, 8], f32([1.0] * 32)),
        "labels": ("I64", [4, 8], i64([1] * 32))}), "error",
      ["input", "F32"], model=so(d, "gpt"))
    # Images for the ResNet: right, wrong size, wrong channels, NaN.
    def images(shape, value=0.1, labels=3):
        n = 1
        for s in shape:
            n *= s
        return lambda f: write_safetensors(f, {
            "input": ("F32", shape, f32([value] * n)),
            "labels": ("I64", [shape[0]], i64([i % labels
                                               for i in range(shape[0])]))})
    D("resnet-images-ok", images([8, 3, 8, 8]), "ok", model=so(d, "resnet"))
    D("resnet-images-size", images([8, 3, 16, 16]), "error",
      ["input", "[8, 3, 16, 16]"], model=so(d, "resnet"))
    D("resnet-images-channels", images([8, 1, 8, 8]), "error",
      ["input", "[8, 1, 8, 8]"], model=so(d, "resnet"))
    D("resnet-images-nan", images([8, 3, 8, 8], float("nan")), "error",
      ["nan"], model=so(d, "resnet"))
    D("resnet-images-label-range", images([8, 3, 8, 8], labels=7), "error",
      ["label"], model=so(d, "resnet"))
    D("resnet-images-constant", images([8, 3, 8, 8], 0.0), "any",
      ["nan", "inf"], model=so(d, "resnet"))
    D("mse-labels-int", lambda f: mlp_data(f, 16), "error",
      ["labels", "I64", "F32"], model=None, extra=())
    # The last one wants an MSE model; replace its command.
    c = add.last()
    mse = d.path("data", "mse.so")
    subprocess.run([d.tool("gpipe-compile")] + PRESET_MLP +
                   ["--loss", "mse", "--quiet", "-o", mse], check=True)
    c.cmds = [["gpipe-run", mse, "--steps", "1", "--quiet", "--data",
               c.cmds[0][-1]]]


def model_family(d, add):
    mlp, out = so(d, "mlp"), d.path("model")
    os.makedirs(out, exist_ok=True)
    data = open(mlp, "rb").read()

    def M(name, content, expect="error", names=None, args=()):
        f = os.path.join(out, name + ".so")
        if content is not None:
            open(f, "wb").write(content)
        add(Case("model", name, ["gpipe-run", f, "--steps", "1",
                                  "--quiet"] + list(args), expect,
                 names or [name + ".so"]))
    M("empty", b"")
    M("text", b"hello\n")
    M("elf-magic-only", b"\x7fELF")
    for pct in (1, 10, 50, 90):
        M("truncated-%d" % pct, data[:len(data) * pct // 100])
    M("random", bytes(random.Random(5).randrange(256) for _ in range(20000)))
    # A byte flipped inside the metadata JSON string.
    at = data.find(b'"parameters"')
    if at > 0:
        b = bytearray(data)
        b[at + 1] = ord("X")
        M("metadata-key-changed", bytes(b), "error", ["metadata", "parameters",
                                                     "metadata-key-changed"])
        b = bytearray(data)
        b[at - 1] = ord("{")
        M("metadata-broken-json", bytes(b), "error",
          ["metadata", "json", "JSON"])
    at = data.find(b'"arena_bytes":')
    if at > 0:
        b = bytearray(data)
        end = at + len(b'"arena_bytes":')
        # Make the first digit a 9: a bigger arena than planned.
        b[end] = ord("9")
        M("metadata-arena-edited", bytes(b), "any", ["arena"])
    M("missing", None, "error", ["missing.so"])
    M("directory", None, "error", ["directory"])
    os.makedirs(os.path.join(out, "directory.so"), exist_ok=True)

    def c_lib(name, source):
        src = os.path.join(out, name + ".c")
        open(src, "w").write(source)
        r = subprocess.run(["cc", "-shared", "-fPIC", "-o",
                            os.path.join(out, name + ".so"), src],
                           capture_output=True)
        return r.returncode == 0
    libs = {
        "c-no-symbols": "int x;\n",
        "c-null-metadata": "int gpipe_model_abi_version(void){return %s;}\n"
                           "const char *gpipe_model_metadata(void){return 0;}\n",
        "c-garbage-metadata": "int gpipe_model_abi_version(void){return %s;}\n"
                              "const char *gpipe_model_metadata(void)"
                              "{return \"{\\\"ranks\\\": 5}\";}\n",
        "c-empty-metadata": "int gpipe_model_abi_version(void){return %s;}\n"
                            "const char *gpipe_model_metadata(void)"
                            "{return \"{}\";}\n",
        "c-abi-negative": "int gpipe_model_abi_version(void){return -1;}\n"
                          "const char *gpipe_model_metadata(void)"
                          "{return \"{}\";}\n",
    }
    abi = abi_version(d, mlp)
    for name, source in libs.items():
        if c_lib(name, source.replace("%s", str(abi))):
            M(name, None, "error", [name + ".so", "metadata", "ABI",
                                    "gpipe_model"])
    # A model library of another model with this model's data; with the
    # other's optimizer.
    M("gpt-with-mlp-data", None, "error", ["input"],
      args=["--data", d.path("base", "mlp.st")])
    add.last().cmds[0][1] = so(d, "gpt")
    M("onnx-mlp-with-preset-data", None, "error", ["input"],
      args=["--data", d.path("base", "mlp.st")])
    add.last().cmds[0][1] = so(d, "onnx-mlp")
    # The object file the library was linked from.
    obj = os.path.join(out, "mlp.o")
    subprocess.run([d.tool("gpipe-compile")] + PRESET_MLP +
                   ["--emit", "obj", "--quiet", "-o", obj], check=True)
    M("object-file", None, "error", ["mlp.o", "shared library"])
    add.last().cmds[0][1] = obj
    # A shared library that is not a model: a system library.
    for lib in ("/lib/x86_64-linux-gnu/libm.so.6",):
        if os.path.exists(lib):
            M("system-library", None, "error", ["libm.so.6"])
            add.last().cmds[0][1] = lib


def abi_version(d, lib):
    """The model ABI version this tree's runtime loads (Program.h)."""
    text = open(os.path.join(ROOT, "runtime", "include", "gpipe", "Runtime",
                             "Program.h")).read()
    m = re.search(r"#define GPIPE_RT_ABI_VERSION (\d+)", text)
    return int(m.group(1)) if m else 1


def checkpoint_family(d, add):
    base = d.path("base", "ckpt")
    out = d.path("ckpt")
    os.makedirs(out, exist_ok=True)
    steps = sorted(os.listdir(base))
    newest = steps[-1]

    def fresh(name):
        dst = os.path.join(out, name)
        if os.path.exists(dst):
            shutil.rmtree(dst)
        shutil.copytree(base, dst)
        return dst

    def C(name, edit, expect="error", names=None, model=None, args=(),
          keep_check=True, steps_arg="4"):
        dst = fresh(name)
        edit(dst)
        cmd = ["gpipe-run", model or so(d, "mlp"), "--steps", steps_arg,
               "--quiet", "--checkpoint-dir", dst, "--resume"] + list(args)
        snapshot = {}

        def setup():
            snapshot["digest"] = file_digest(dst)

        def check(res):
            if res.rc != 0 and keep_check and \
                    file_digest(dst) != snapshot["digest"]:
                return "a failed resume changed the checkpoint directory"
            if res.rc == 0:
                tmps = [n for n in os.listdir(dst) if n.startswith(".tmp")]
                if tmps:
                    return "left %s in the checkpoint directory" % tmps
            return None
        add(Case("checkpoint", name, cmd, expect,
                 names or [newest, "MANIFEST", "checkpoint"], check=check,
                 setup=setup))

    def manifest(dst, step=newest):
        return os.path.join(dst, step, "MANIFEST.json")

    def edit_json(fn, step=newest, rehash=False):
        def e(dst):
            p = manifest(dst, step)
            m = json.load(open(p))
            fn(m)
            json.dump(m, open(p, "w"))
        return e

    def only_newest(fn):
        """Edit the newest and remove the older ones: nothing verifies."""
        def e(dst):
            fn(dst)
            for s in steps[:-1]:
                shutil.rmtree(os.path.join(dst, s))
        return e

    def files_of(dst, step=newest):
        """The tensor files, largest first."""
        d = os.path.join(dst, step)
        return sorted((n for n in os.listdir(d) if n != "MANIFEST.json"),
                      key=lambda n: -os.path.getsize(os.path.join(d, n)))

    def set_field(path_keys, value):
        def fn(m):
            obj = m
            for k in path_keys[:-1]:
                obj = obj[k]
            obj[path_keys[-1]] = value
        return fn

    def write(path, data):
        open(path, "wb").write(data)

    sample = json.load(open(os.path.join(base, newest, "MANIFEST.json")))
    C("ok-resume", lambda dst: None, "ok")
    C("manifest-empty", only_newest(lambda dst: write(manifest(dst), b"")))
    C("manifest-truncated", only_newest(lambda dst: write(
        manifest(dst), open(manifest(dst), "rb").read()[:40])))
    C("manifest-not-json", only_newest(lambda dst: write(manifest(dst),
                                                         b"\x00garbage")))
    C("manifest-array", only_newest(lambda dst: write(manifest(dst),
                                                      b"[1,2]")))
    C("manifest-missing", only_newest(lambda dst: os.remove(manifest(dst))))
    for key in sorted(sample):
        v = sample[key]
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            continue
        bad = (v + 1) if isinstance(v, int) else v + "x"
        C("manifest-edit-" + key, only_newest(edit_json(set_field([key],
                                                                  bad))))
        C("manifest-type-" + key, only_newest(edit_json(set_field(
            [key], [1] if isinstance(v, int) else 7))))
        C("manifest-drop-" + key, only_newest(edit_json(
            lambda m, k=key: m.pop(k))))
    C("manifest-step-huge", only_newest(edit_json(set_field(
        ["step"], 1 << 62))))
    C("manifest-step-negative", only_newest(edit_json(set_field(
        ["step"], -2))))
    C("older-still-good", edit_json(set_field(["step"], 999)), "ok",
      keep_check=False)
    C("tensor-file-missing", only_newest(
        lambda dst: os.remove(os.path.join(dst, newest, files_of(dst)[0]))))
    C("tensor-file-truncated", only_newest(
        lambda dst: (lambda p: write(p, open(p, "rb").read()[:50]))(
            os.path.join(dst, newest, files_of(dst)[0]))))
    C("tensor-file-byte-flipped", only_newest(
        lambda dst: (lambda p: write(p, (lambda b: bytes(b[:-3]) + bytes(
            [b[-3] ^ 0x40]) + bytes(b[-2:]))(open(p, "rb").read())))(
            os.path.join(dst, newest, files_of(dst)[0]))))
    C("tensor-file-extra", only_newest(
        lambda dst: write(os.path.join(dst, newest, "extra.safetensors"),
                          b"junk")), "any", ["extra"])
    def traversal(m):
        for entry in (m.get("files") or []):
            if isinstance(entry, dict) and "name" in entry:
                entry["name"] = "../../../etc/passwd"
            elif isinstance(entry, dict) and "path" in entry:
                entry["path"] = "../../../etc/passwd"
    if isinstance(sample.get("files"), list):
        C("manifest-path-traversal", only_newest(edit_json(traversal)))
    C("step-dir-is-file", only_newest(
        lambda dst: (shutil.rmtree(os.path.join(dst, newest)),
                     write(os.path.join(dst, newest), b"x"))))
    C("step-dir-empty", only_newest(
        lambda dst: (shutil.rmtree(os.path.join(dst, newest)),
                     os.makedirs(os.path.join(dst, newest)))))
    C("step-dir-odd-name", lambda dst: os.makedirs(
        os.path.join(dst, "step-abc")), "ok", keep_check=False)
    C("step-dir-huge-number", lambda dst: os.makedirs(
        os.path.join(dst, "step-99999999999999999999999")), "ok",
      keep_check=False)
    C("step-dir-symlink-loop", lambda dst: os.symlink(
        "step-loop", os.path.join(dst, "step-loop")), "ok",
      keep_check=False)
    C("tmp-dir-leftover", lambda dst: os.makedirs(
        os.path.join(dst, ".tmp-step-00000009-999999999")), "ok",
      keep_check=False)
    C("resume-other-model", lambda dst: None, "error",
      ["wte", "param", "checkpoint", "token"], model=so(d, "gpt"))
    C("resume-wider-model", lambda dst: None, "error",
      ["shape", "[16, 4]", "[8, 4]", "0.weight"], model=so(d, "mlp-wide"))
    C("resume-K1", lambda dst: None, "ok", model=so(d, "mlp1"))
    C("resume-M4", lambda dst: None, "ok", model=so(d, "mlp-m4"))
    C("resume-D2", lambda dst: None, "ok", model=so(d, "mlp-dp"))
    C("resume-adam-from-sgd", lambda dst: None, "error",
      ["adam", "sgd", "optimizer"], model=so(d, "mlp-adam"))
    C("resume-optimizer-flag", lambda dst: None, "error",
      ["momentum", "optimizer"], args=["--optimizer", "momentum"])
    C("resume-seed-differs", lambda dst: None, "any", ["seed"],
      args=["--seed", "5"])
    C("resume-past-steps", lambda dst: None, "any", ["step"],
      steps_arg="1")
    C("resume-empty-dir", lambda dst: [shutil.rmtree(os.path.join(dst, s))
                                       for s in steps], "ok",
      keep_check=False)
    add(Case("checkpoint", "resume-missing-dir",
             ["gpipe-run", so(d, "mlp"), "--steps", "1", "--quiet",
              "--checkpoint-dir", os.path.join(out, "nope", "deeper"),
              "--resume"], "ok"))
    existing = fresh("no-resume-existing")
    add(Case("checkpoint", "no-resume-existing",
             ["gpipe-run", so(d, "mlp"), "--steps", "1", "--quiet",
              "--checkpoint-dir", existing], "error", ["--resume"],
             check=unchanged(existing, "checkpoints")))


def faults_family(d, add):
    mlp, out = so(d, "mlp"), d.path("faults")
    os.makedirs(out, exist_ok=True)
    params = os.path.join(out, "params.st")

    def R(name, args, expect="error", names=("rank",), model=None, **kw):
        add(Case("faults", name, ["gpipe-run", model or mlp, "--quiet"] +
                 list(args), expect, names, **kw))
    for rank in (0, 1):
        for mode in ("stop", "stall", "kill"):
            R("fault-rank%d-%s" % (rank, mode),
              ["--steps", "2", "--timeout", "1", "--inject-fault",
               "rank=%d,step=1,action=1,mode=%s" % (rank, mode),
               "--save-params", params], "error", ["rank %d" % rank,
                                                   "rank"],
              check=absent(params), timeout=30,
              dies_by=(signal.SIGKILL,) if mode == "kill" else ())
    R("fault-dp-replica1", ["--steps", "2", "--timeout", "1",
                            "--inject-fault",
                            "rank=0,replica=1,step=1,action=0,mode=stall"],
      "error", ["replica 1"], model=so(d, "mlp-dp"), timeout=30)
    R("nan-stop", ["--steps", "2", "--inject-nan", "rank=1,step=1,mb=0"],
      "error", ["nan", "NaN"])
    R("nan-skip", ["--steps", "3", "--inject-nan", "rank=1,step=2,mb=1",
                   "--on-nonfinite", "skip"], "ok")
    R("nan-rank0", ["--steps", "2", "--inject-nan", "rank=0,step=1,mb=0"],
      "any", ["rank 0", "nan"])
    R("nan-resnet", ["--steps", "2", "--inject-nan", "rank=1,step=1,mb=0"],
      "error", ["nan", "NaN"], model=so(d, "resnet"))
    R("nan-rank0-skip", ["--steps", "2", "--inject-nan",
                         "rank=0,step=1,mb=1", "--on-nonfinite", "skip"],
      "any", ["skip", "nan"])
    # Signals: SIGTERM and SIGINT during a long run, SIGKILL during a run
    # that writes checkpoints, then a resume.
    long_run = ["--steps", "100000000", "--data", d.path("base", "mlp.st")]
    for sig in (signal.SIGTERM, signal.SIGINT):
        R("signal-%s" % sig.name, long_run + ["--save-params", params],
          "error", ["signal", "interrupted", "terminated", sig.name],
          signal_after=(1.0, sig), may_die=True, check=absent(params))
    ck = os.path.join(out, "kill-ckpt")
    R("kill-during-checkpoints", ["--steps", "100000000", "--checkpoint-dir",
                                  ck, "--checkpoint-every", "1"],
      "error", [], signal_after=(1.5, signal.SIGKILL), may_die=True,
      setup=lambda: shutil.rmtree(ck, ignore_errors=True))
    add(Case("faults", "resume-after-kill",
             ["gpipe-run", mlp, "--quiet", "--steps", "3000",
              "--checkpoint-dir", ck, "--resume", "--checkpoint-every",
              "1000"], "any", [ck, "checkpoint"],
             check=lambda res: None if os.path.isdir(ck) else "no checkpoints"))
    cc = os.path.join(out, "killed.so")
    add(Case("faults", "compile-killed",
             ["gpipe-compile", "--preset", "gpt", "--depth", "60", "--width",
              "64", "--heads", "2", "--seq-len", "16", "--batch", "4",
              "--quiet", "-o", cc], "any", [],
             signal_after=(1.0, signal.SIGTERM), may_die=True,
             check=absent(cc)))
    if shutil.which("mpirun"):
        mpi = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca",
               "btl", "self,vader"]
        add(Case("faults", "mpi-wrong-np",
                 mpi + ["-np", "3", d.tool("gpipe-run"), mlp, "--transport",
                        "mpi", "--steps", "1", "--quiet"], "error",
                 ["3", "ranks", "processes"], timeout=60))
        add(Case("faults", "mpi-kill-rank1",
                 mpi + ["-np", "2", d.tool("gpipe-run"), mlp, "--transport",
                        "mpi", "--steps", "2", "--timeout", "2", "--quiet",
                        "--inject-fault", "rank=1,step=1,action=1,mode=kill"],
                 "error", ["rank 1", "process 1", "rank"], timeout=60,
                 error_pattern=r"exited on signal 9|Killed"))
        add(Case("faults", "mpi-stall-rank0",
                 mpi + ["-np", "2", d.tool("gpipe-run"), mlp, "--transport",
                        "mpi", "--steps", "2", "--timeout", "2", "--quiet",
                        "--inject-fault", "rank=0,step=1,action=1,mode=stall"],
                 "error", ["rank 0", "rank"], timeout=60))
        add(Case("faults", "mpi-different-models",
                 mpi + ["-np", "1", d.tool("gpipe-run"), mlp, "--transport",
                        "mpi", "--steps", "1", "--quiet", ":", "-np", "1",
                        d.tool("gpipe-run"), so(d, "mlp-m4"), "--transport",
                        "mpi", "--steps", "1", "--quiet"], "error",
                 ["model", "same"], timeout=60))


def limits_family(d, add):
    mlp, out = so(d, "mlp"), d.path("limits")
    os.makedirs(out, exist_ok=True)
    AS, FSIZE, NOFILE = (resource.RLIMIT_AS, resource.RLIMIT_FSIZE,
                         resource.RLIMIT_NOFILE)
    big_gpt = ["--preset", "gpt", "--depth", "2", "--width", "256", "--heads",
               "4", "--seq-len", "64", "--batch", "16", "--vocab", "512"]
    for mb in (40, 150, 400):
        add(Case("limits", "compile-as-%dMB" % mb,
                 ["gpipe-compile"] + big_gpt + ["--quiet", "-o",
                                                os.path.join(out, "g.so")],
                 "any", ["memory", "failed to map"], limits={AS: mb << 20},
                 check=absent(os.path.join(out, "g.so"))))
        add(Case("limits", "import-as-%dMB" % mb,
                 ["gpipe-import", os.path.join(INPUTS, "gpt.onnx"), "-o",
                  os.path.join(out, "g.mlir")], "any",
                 ["memory", "failed to map"],
                 limits={AS: mb << 20},
                 check=absent(os.path.join(out, "g.mlir"))))
    gso = os.path.join(out, "big.so")
    subprocess.run([d.tool("gpipe-compile")] + big_gpt +
                   ["--stages", "2", "--quiet", "-o", gso], check=True)
    for mb in (60, 120, 250):
        add(Case("limits", "run-as-%dMB" % mb,
                 ["gpipe-run", gso, "--steps", "1", "--quiet", "--timeout",
                  "5"], "any", ["memory", "rank", "thread"],
                 limits={AS: mb << 20}, timeout=60))
    for size in (0, 4096, 100000):
        small = "error" if size == 0 else "any"
        add(Case("limits", "compile-fsize-%d" % size,
                 ["gpipe-compile"] + PRESET_MLP +
                 ["--quiet", "-o", os.path.join(out, "f.so")], small,
                 ["f.so", "size", "File too large", "write"],
                 limits={FSIZE: size},
                 check=absent(os.path.join(out, "f.so"))))
        add(Case("limits", "run-save-params-fsize-%d" % size,
                 ["gpipe-run", mlp, "--steps", "1", "--quiet",
                  "--save-params", os.path.join(out, "p.st")], small,
                 ["p.st", "File too large", "write"], limits={FSIZE: size},
                 check=absent(os.path.join(out, "p.st"))))
        ck = os.path.join(out, "ck-%d" % size)
        add(Case("limits", "run-checkpoint-fsize-%d" % size,
                 ["gpipe-run", mlp, "--steps", "2", "--quiet",
                  "--checkpoint-dir", ck], small,
                 ["ck-%d" % size, "File too large", "write"],
                 limits={FSIZE: size},
                 setup=lambda ck=ck: shutil.rmtree(ck, ignore_errors=True),
                 check=lambda res, ck=ck: None if not os.path.isdir(ck) or
                 not [n for n in os.listdir(ck) if n.startswith(".tmp")]
                 else "left a temporary checkpoint directory"))
    add(Case("limits", "run-trace-fsize",
             ["gpipe-run", mlp, "--steps", "2", "--quiet", "--trace",
              os.path.join(out, "t.json")], "error",
             ["t.json", "File too large"], limits={FSIZE: 512},
             check=absent(os.path.join(out, "t.json"))))
    for n in (3, 6, 12):
        add(Case("limits", "compile-nofile-%d" % n,
                 ["gpipe-compile"] + PRESET_MLP +
                 ["--quiet", "-o", os.path.join(out, "n.so")], "any",
                 ["open", "file", "descriptor"], limits={NOFILE: n}))
        add(Case("limits", "run-nofile-%d" % n,
                 ["gpipe-run", mlp, "--steps", "1", "--quiet"], "any",
                 ["open", "file", "descriptor"], limits={NOFILE: n}))
    # A tiny disk: a 64 KiB tmpfs, when this user may mount one.
    mnt = os.path.join(out, "tiny")
    os.makedirs(mnt, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                        mnt], capture_output=True, text=True)
    if r.returncode != 0:
        d.notes.append("limits: no tiny tmpfs (%s); its cases skipped" %
                       r.stderr.strip())
        return
    d.mounts.append(mnt)
    big = os.path.join(mnt, "big.so")
    filler = os.path.join(mnt, "filler")

    def fill(keep):
        def f():
            for n in os.listdir(mnt):
                p = os.path.join(mnt, n)
                shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
            if keep:
                with open(filler, "wb") as fh:
                    try:
                        fh.write(b"\0" * (64 << 10))
                    except OSError:
                        pass
                os.truncate(filler, (64 << 10) - keep)
        return f
    add(Case("limits", "tiny-disk-compile", ["gpipe-compile"] + big_gpt +
             ["--quiet", "-o", big], "error",
             ["big.so", "No space", "space"], setup=fill(0),
             check=absent(big)))
    add(Case("limits", "tiny-disk-import", ["gpipe-import"] + big_gpt +
             ["-o", os.path.join(mnt, "g.mlir")], "any",
             ["g.mlir", "No space", "space"], setup=fill(0),
             check=absent(os.path.join(mnt, "g.mlir"))))
    add(Case("limits", "tiny-disk-save-params",
             ["gpipe-run", gso, "--steps", "1", "--quiet", "--save-params",
              os.path.join(mnt, "p.st")], "error",
             ["p.st", "No space", "space"], setup=fill(0),
             check=absent(os.path.join(mnt, "p.st"))))
    add(Case("limits", "tiny-disk-checkpoint",
             ["gpipe-run", gso, "--steps", "2", "--quiet",
              "--checkpoint-dir", os.path.join(mnt, "ck")], "error",
             ["ck", "No space", "space"], setup=fill(0),
             check=lambda res: None if not os.path.isdir(
                 os.path.join(mnt, "ck")) or not [
                 n for n in os.listdir(os.path.join(mnt, "ck"))
                 if n.startswith(".tmp")] else
             "left a temporary checkpoint directory"))
    add(Case("limits", "full-disk-trace",
             ["gpipe-run", mlp, "--steps", "2", "--quiet", "--trace",
              os.path.join(mnt, "t.json")], "error",
             ["t.json", "No space", "space"], setup=fill(1024),
             check=absent(os.path.join(mnt, "t.json"))))
    add(Case("limits", "full-disk-compile-small",
             ["gpipe-compile"] + PRESET_MLP + ["--quiet", "-o",
                                               os.path.join(mnt, "m.so")],
             "error", ["m.so", "No space", "space"], setup=fill(2048),
             check=absent(os.path.join(mnt, "m.so"))))


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def identity_family(d, add):
    """Files that belong to another model or run, values that enter bad,
    flags that conflict, messages that point elsewhere: each refused where
    it enters, naming the file, field, tensor or flag."""
    out = d.path("identity")
    os.makedirs(out, exist_ok=True)
    mlp, data = so(d, "mlp"), d.path("base", "mlp.st")

    def tool(*argv):
        r = subprocess.run([d.tool(argv[0])] + list(argv[1:]),
                           capture_output=True, text=True, cwd=out)
        if r.returncode != 0:
            sys.exit("adversarial: identity setup failed: %s: %s" %
                     (" ".join(argv), r.stdout + r.stderr))
    P = lambda name: os.path.join(out, name)
    # A training profile, a --predict profile, parameters and gradients, a
    # ResNet's parameters (running variances), a checkpoint.
    tool("gpipe-run", mlp, "--steps", "3", "--quiet", "--profile",
         P("train.json"), "--save-params", P("params.st"), "--save-grads",
         P("grads.st"))
    tool("gpipe-compile", *(PRESET_MLP + ["--stages", "2", "--inference",
                                          "--quiet", "-o", P("infer.so")]))
    tool("gpipe-run", P("infer.so"), "--predict", "--data", data, "--quiet",
         "--profile", P("predict.json"))
    tool("gpipe-run", so(d, "resnet"), "--steps", "1", "--quiet",
         "--save-params", P("resnet.st"))
    tool("gpipe-compile", *(PRESET_MLP + ["--stages", "1", "--inference",
                                          "--quiet", "-o", P("infer1.so")]))
    tool("gpipe-compile", *(PRESET_RESNET + [
        "--stages", "2", "--inference", "--quiet", "-o", P("rinfer.so")]))
    images = P("images.st")
    rng = random.Random(3)
    write_safetensors(images, {"input": ("F32", [4, 3, 8, 8], f32(
        [rng.uniform(-1, 1) for _ in range(4 * 3 * 8 * 8)]))})
    tool("gpipe-run", mlp, "--steps", "2", "--quiet", "--checkpoint-dir",
         P("ck"), "--checkpoint-every", "1")

    def I(name, cmd, expect="error", names=(), **kw):
        add(Case("identity", name, cmd, expect, names, **kw))
    comp = lambda *a: ["gpipe-compile"] + list(a) + ["--quiet", "-o",
                                                     P("x.so")]

    def edited(name, src, fn):
        dst = P(name)
        prof = json.load(open(src))
        fn(prof)
        json.dump(prof, open(dst, "w"))
        return dst

    def no_steps(res):
        if re.search(r"^loss: |^\s+1\s+[0-9.]+", res.output, re.M):
            return "trained before refusing the file"
        return None

    # -- profiles: matched by model, by run kind, parsed strictly
    train = P("train.json")
    wide = PRESET_MLP[:]
    wide[wide.index("--width") + 1] = "16"
    I("profile-other-width", comp(*(wide + ["--stages", "2",
                                            "--profile-file", train])),
      "error", ["another model"])
    I("profile-other-preset", comp(*(PRESET_GPT + [
        "--stages", "2", "--microbatches", "2", "--profile-file", train])),
      "error", ["another model"])
    I("profile-other-input", comp(*(PRESET_MLP[:-6] + [
        "--in-features", "5", "--classes", "3", "--batch", "8",
        "--stages", "2", "--profile-file", train])), "error",
      ["another model"])
    I("profile-other-M", comp(*(PRESET_MLP + ["--stages", "2",
                                              "--microbatches", "4",
                                              "--profile-file", train])),
      "ok", check=lambda r: None if "warning" in r.output and
      "samples" in r.output else "no warning that another size was used")
    I("profile-same-model", comp(*(PRESET_MLP + [
        "--stages", "2", "--microbatches", "2", "--profile-file", train])),
      "ok", check=lambda r: "a warning for the model's own profile: " +
      r.output[:160] if "warning" in r.output else None)
    run_copy = P("run-other.json")
    shutil.copy(train, run_copy)
    I("profile-merge-other-model", ["gpipe-run", so(d, "mlp-wide"),
                                    "--steps", "2", "--profile", run_copy],
      "error", ["model"], check=all_of(no_steps, unchanged(run_copy)))
    gpt_copy = P("run-gpt.json")
    shutil.copy(train, gpt_copy)
    I("profile-merge-other-source", ["gpipe-run", so(d, "gpt"), "--steps",
                                     "2", "--profile", gpt_copy],
      "error", ["source"], check=all_of(no_steps, unchanged(gpt_copy)))
    I("profile-predict-drives-training",
      comp(*(PRESET_MLP + ["--stages", "2", "--profile-file",
                           P("predict.json")])), "error",
      ["forward", "backward"])
    I("profile-predict-drives-inference",
      comp(*(PRESET_MLP + ["--stages", "2", "--inference", "--profile-file",
                           P("predict.json")])), "ok")
    mixed = P("mixed.json")
    shutil.copy(P("predict.json"), mixed)
    I("profile-mixed-then-training",
      [["gpipe-run", mlp, "--steps", "3", "--quiet", "--profile", mixed],
       comp(*(PRESET_MLP + ["--stages", "2", "--microbatches", "2",
                            "--profile-file", mixed]))], "ok",
      check=lambda r: None if sorted(
          m.get("mode") for m in json.load(open(mixed))["measurements"]) ==
      ["inference", "train"] else "the two kinds of run were merged")
    dup = edited("dup.json", train, lambda p: p["measurements"].append(
        p["measurements"][0]))
    I("profile-duplicate", comp(*(PRESET_MLP + ["--stages", "2",
                                                "--profile-file", dup])),
      "error", ["measurements[1]"])
    dup2 = edited("dup2.json", train, lambda p: p["measurements"].append(
        dict(p["measurements"][0], runs=7)))
    I("profile-duplicate-other-runs",
      comp(*(PRESET_MLP + ["--stages", "2", "--profile-file", dup2])),
      "error", ["measurements[1]"])
    badmode = edited("mode.json", train, lambda p: p["measurements"][0]
                     .update(mode="eval"))
    I("profile-mode-unknown", comp(*(PRESET_MLP + [
        "--stages", "2", "--profile-file", badmode])), "error", ["mode"])
    numeric = edited("model-number.json", train,
                     lambda p: p.update(model=12345))
    I("profile-model-not-text", comp(*(PRESET_MLP + [
        "--stages", "2", "--profile-file", numeric])), "error", ["model"])
    older = edited("older.json", train, lambda p: p.pop("model"))
    I("profile-before-fingerprints", comp(*(PRESET_MLP + [
        "--stages", "2", "--microbatches", "2", "--profile-file", older])),
      "ok", check=lambda r: None if "fingerprint" in r.output else
      "no warning that the layers are matched by name only")

    # -- parameter files: values checked at load, whatever K is
    _, params = read_safetensors(P("params.st"))

    def params_with(name, tensor, index, value, src="params.st"):
        return with_value(P(src), P(name), tensor, index, value)
    first = sorted(params)[0]
    predict = lambda model, params_file, inputs=data: [
        "gpipe-run", model, "--predict", "--data", inputs, "--quiet",
        "--params", params_file, "--save-outputs", P("out.st")]
    for label, value in (("nan", float("nan")), ("inf", float("inf")),
                         ("-inf", float("-inf"))):
        bad = params_with("p-%s.st" % label, first, 3, value)
        for k, model in (("K2", P("infer.so")), ("K1", P("infer1.so"))):
            I("params-%s-%s" % (label, k), predict(model, bad), "error",
              [first], check=absent(P("out.st")))
    I("params-grads-file", predict(P("infer.so"), P("grads.st")), "error",
      ["gradient"], check=absent(P("out.st")))
    _, rparams = read_safetensors(P("resnet.st"))
    variances = sorted(k for k in rparams if "var" in k)
    if variances:
        neg = params_with("r-negvar.st", variances[0], 0, -1.0,
                          src="resnet.st")
        I("params-negative-variance", predict(P("rinfer.so"), neg, images),
          "error", [variances[0]], check=absent(P("out.st")))
        zero = params_with("r-zerovar.st", variances[0], 0, 0.0,
                           src="resnet.st")
        I("params-zero-variance", predict(P("rinfer.so"), zero, images),
          "ok")

    def finite_outputs(res):
        _, outs = read_safetensors(P("out.st"))
        vals = outs.get("output", [])
        if not vals or any(v != v or v in (float("inf"), float("-inf"))
                           for v in vals):
            return "the outputs are missing or not finite"
        return None
    I("params-ok", predict(P("infer.so"), P("params.st")), "ok",
      check=finite_outputs)

    # -- a checkpoint whose tensor holds a NaN, checksums recomputed
    def nan_checkpoint(name):
        dst = P(name)
        shutil.copytree(P("ck"), dst)
        newest = sorted(os.listdir(dst))[-1]
        for old in sorted(os.listdir(dst))[:-1]:
            shutil.rmtree(os.path.join(dst, old))
        step = os.path.join(dst, newest)
        tensors = os.path.join(step, "params.safetensors")
        with_value(tensors, tensors, first, 1, float("nan"))
        raw = open(tensors, "rb").read()
        man_path = os.path.join(step, "MANIFEST.json")
        man = json.load(open(man_path))
        man["files"]["params.safetensors"].update(bytes=len(raw),
                                                  fnv1a64=fnv1a64(raw))
        man.pop("manifest_fnv1a64")
        man["manifest_fnv1a64"] = fnv1a64(json.dumps(
            man, separators=(",", ":"), sort_keys=True).encode())
        json.dump(man, open(man_path, "w"))
        return dst
    nanck = nan_checkpoint("ck-nan")
    I("checkpoint-nan-tensor", ["gpipe-run", mlp, "--steps", "4", "--quiet",
                                "--checkpoint-dir", nanck, "--resume"],
      "error", [first], check=all_of(no_steps, unchanged(nanck)))

    # -- one writer per checkpoint directory
    lockdir = P("ck-locked")
    holder = [d.tool("gpipe-run"), mlp, "--steps", "5", "--quiet",
              "--checkpoint-dir", lockdir, "--checkpoint-every", "1",
              "--inject-fault", "rank=0,step=1,mode=stall", "--timeout", "30"]
    I("checkpoint-second-writer",
      ["sh", "-c", "%s > /dev/null 2>&1 & pid=$!; "
       "for i in $(seq 100); do test -s %s/LOCK && break; sleep 0.1; done; "
       "%s %s --steps 2 --quiet --checkpoint-dir %s; rc=$?; kill -9 $pid; "
       "wait $pid 2>/dev/null; exit $rc" % (
           " ".join(holder), lockdir, d.tool("gpipe-run"), mlp, lockdir)],
      "error", ["in use by another run"],
      check=lambda r: None if "pid" in r.output and "host" in r.output
      else "the refusal does not name the owner")

    # -- conflicting flags and ranges
    csv = P("gpipe.csv")
    open(csv, "w").write("0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,"
                         "0B1\n1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,"
                         "1SEND_B1\n")
    I("flags-schedule-and-file", comp(*(PRESET_MLP + [
        "--stages", "2", "--microbatches", "2", "--schedule", "zbv",
        "--schedule-file", csv])), "error", ["--schedule-file"])
    I("flags-virtual-stages-0", comp(*(PRESET_MLP + [
        "--stages", "2", "--virtual-stages", "0"])), "error",
      ["virtual-stages"])
    bom = P("bom.csv")
    open(bom, "wb").write(b"\xef\xbb\xbf" + open(csv, "rb").read())
    I("flags-csv-bom", comp(*(PRESET_MLP + [
        "--stages", "2", "--microbatches", "2", "--schedule-file", bom])),
      "ok")
    I("flags-timeout-tiny", ["gpipe-run", mlp, "--steps", "1",
                             "--timeout", "1e-6"], "error", ["timeout"])
    I("flags-steps-and-epochs", ["gpipe-run", mlp, "--steps", "2",
                                 "--epochs", "1", "--data", data], "error",
      ["--steps", "--epochs"])

    # -- messages: no module dump after a located error
    two = P("two-results.mlir")
    open(two, "w").write(
        "nn.parameter @w0 : tensor<4x4xf32> init normal(2.0e-02)\n"
        "func.func @forward(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, "
        "tensor<8x4xf32>) {\n"
        "  %w = nn.param @w0 : tensor<4x4xf32>\n"
        "  %y = nn.linear %x, %w {transpose_weight = true} : "
        "(tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>\n"
        "  return %y, %y : tensor<8x4xf32>, tensor<8x4xf32>\n}\n")
    I("message-no-module-dump", comp(two), "error", ["two-results.mlir"])
    lib = P("renamed-library.so")
    shutil.copy(mlp, lib)
    I("message-optimizer-names-library", ["gpipe-run", lib, "--steps", "1",
                                          "--optimizer", "adam"],
      "error", ["renamed-library.so"])
    I("message-clipping-names-library", ["gpipe-run", lib, "--steps", "1",
                                         "--clip-grad-norm", "1"],
      "error", ["renamed-library.so"])


FAMILIES = {"onnx": onnx_family, "mlir": mlir_family,
            "corpus": corpus_family, "flags": flags_family,
            "data": data_family, "model": model_family,
            "checkpoint": checkpoint_family, "faults": faults_family,
            "limits": limits_family, "identity": identity_family}


def main():
    ap = argparse.ArgumentParser(
        description="Hostile inputs to every gpipe tool, counted")
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--family", action="append")
    ap.add_argument("--case", default="")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--keep")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if not os.path.exists(os.path.join(build, "bin", "gpipe-run")):
        sys.exit("adversarial: no tools in %s/bin; build first" % build)
    families = args.family or list(FAMILIES)
    for f in families:
        if f not in FAMILIES:
            sys.exit("adversarial: unknown family '%s' (%s)" %
                     (f, ", ".join(FAMILIES)))
    if args.keep:
        work = os.path.abspath(args.keep)
        if os.path.exists(work):
            shutil.rmtree(work)
        os.makedirs(work)
    else:
        work = tempfile.mkdtemp(prefix="gpipe-adversarial-")
    d = Driver(build, work, args.timeout, args.v)
    d.mounts = []
    try:
        setup_base(d)
        for family in families:
            def add(case):
                if args.case in case.name:
                    d.cases.append(case)
                add.last_case = case
            add.last = lambda: add.last_case
            FAMILIES[family](d, add)
        if args.list:
            for c in d.cases:
                print("%-10s %-6s %s" % (c.family, c.expect, c.name))
            return 0
        return run_all(d, families)
    finally:
        for mnt in d.mounts:
            subprocess.run(["umount", mnt], capture_output=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def run_all(d, families):
    counts = {}
    findings = []
    start = time.monotonic()
    for case in d.cases:
        verdict, reason, res = d.classify(case)
        fam = counts.setdefault(case.family, {"cases": 0, "clean": 0,
                                              "crash": 0, "hang": 0,
                                              "suspect": 0})
        fam["cases"] += 1
        fam[verdict] += 1
        if verdict != "clean":
            findings.append((case, verdict, reason, res))
            print("%s %s/%s: %s" % (verdict.upper(), case.family, case.name,
                                    reason), flush=True)
            print("    $ " + " ".join(shlex_quote(a) for a in res.cmd))
            tail = [l for l in res.output.strip().splitlines() if l][-4:]
            for line in tail:
                print("    | " + line[:200])
        elif d.verbose:
            print("clean %s/%s: %s (%.1f s)" % (case.family, case.name,
                                                reason, res.seconds),
                  flush=True)
    for note in d.notes:
        print("note: " + note)
    print()
    print("%-12s %6s %6s %6s %6s %8s" % ("family", "cases", "clean", "crash",
                                         "hang", "suspect"))
    total = {"cases": 0, "clean": 0, "crash": 0, "hang": 0, "suspect": 0}
    for family in families:
        c = counts.get(family)
        if not c:
            continue
        print("%-12s %6d %6d %6d %6d %8d" % (family, c["cases"], c["clean"],
                                             c["crash"], c["hang"],
                                             c["suspect"]))
        for k in total:
            total[k] += c[k]
    print("(%.0f s)" % (time.monotonic() - start))
    print("adversarial: %d cases, %d clean, %d crash, %d hang, %d suspect" %
          (total["cases"], total["clean"], total["crash"], total["hang"],
           total["suspect"]))
    return 0 if total["clean"] == total["cases"] else 1


def shlex_quote(s):
    import shlex
    return shlex.quote(s)


if __name__ == "__main__":
    sys.exit(main())
