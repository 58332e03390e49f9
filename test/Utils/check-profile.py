#!/usr/bin/env python3
"""Checks a profile gpipe-run --profile wrote, and what a compile made of it.

usage: check-profile.py PROFILE --samples N [--remat P] [--schedule S]
                        [--runs R] [--layers a,b,c] [--recompute] [--transfer]
                        [--scheduled IR.mlir]

Checks the profile's structure: format and version; a measurement for
micro-batches of N samples (measured under remat P and schedule S, over R
runs) whose
layers are exactly the given ones in order,
each with a positive forward and backward (and recompute with
--recompute), the link fitted (--transfer) and the optimizer's rate. With
--scheduled, checks that every gpipe.stage of the IR has forward_time =
action overhead + the sum of its layers' measured forwards, backward_time
= overhead + the sum of backwards and recomputes, and step_time = the
optimizer's rate x the stage's parameter bytes (relative 1e-9). Prints
"profile ok" or the first problem, and exits non-zero on one.
"""
import argparse
import json
import re
import sys


def fail(message):
    print("profile check failed: " + message)
    sys.exit(1)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-12)


def stage_layers(ir):
    """{stage symbol: [layer names]} from the stage forwards' nn.layer ops."""
    layers, current = {}, None
    for line in ir.splitlines():
        m = re.match(r"\s*func\.func @(\w+)_fwd\(", line)
        if m:
            current = m.group(1)
            layers[current] = []
            continue
        if re.match(r"\s*func\.func ", line):
            current = None
        m = re.match(r'\s*%\S+ = nn\.layer "([^"]+)"', line)
        if current and m and line.startswith("    %"):
            layers[current].append(m.group(1))
    return layers


def param_bytes(ir):
    sizes = {}
    for m in re.finditer(r'nn\.parameter @("?[^\s"]+"?)[^:\n]*: tensor<([^>]*)>',
                         ir):
        dims = m.group(2).split("x")[:-1]
        n = 1
        for d in dims:
            n *= int(d)
        sizes[m.group(1).strip('"')] = 4 * n
    return sizes


def main():
    p = argparse.ArgumentParser()
    p.add_argument("profile")
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--remat")
    p.add_argument("--schedule")
    p.add_argument("--runs", type=int)
    p.add_argument("--layers")
    p.add_argument("--recompute", action="store_true")
    p.add_argument("--transfer", action="store_true")
    p.add_argument("--scheduled")
    a = p.parse_args()
    with open(a.profile) as f:
        root = json.load(f)
    if root.get("format") != "gpipe-profile" or root.get("version") != 1:
        fail("not a version 1 gpipe profile")
    found = [m for m in root["measurements"]
             if m["microbatch_samples"] == a.samples and
             (a.remat is None or m.get("remat") == a.remat) and
             (a.schedule is None or m.get("schedule") == a.schedule)]
    if len(found) != 1:
        fail("expected one measurement of %d samples, got %d" %
             (a.samples, len(found)))
    m = found[0]
    if a.runs is not None and m.get("runs") != a.runs:
        fail("%s runs, expected %d" % (m.get("runs"), a.runs))
    names = [l["name"] for l in m["layers"]]
    if a.layers is not None and names != a.layers.split(","):
        fail("layers %s, expected %s" % (names, a.layers))
    for l in m["layers"]:
        keys = ["forward", "backward"] + (["recompute"] if a.recompute else [])
        for k in keys:
            if not (l.get(k, 0) > 0):
                fail("layer %s: %s = %s" % (l["name"], k, l.get(k)))
    if a.transfer and not (m.get("transfer") and
                           m["transfer"]["bandwidth"] > 0):
        fail("no link fitted")
    if not (m.get("optimizer") and m["optimizer"]["seconds_per_byte"] > 0):
        fail("no optimizer rate")
    if a.scheduled:
        with open(a.scheduled) as f:
            ir = f.read()
        by_name = {l["name"]: l for l in m["layers"]}
        over = m.get("action_overhead", {})
        layers = stage_layers(ir)
        params = param_bytes(ir)
        stages = re.findall(r"gpipe\.stage @(\w+) .*\{(.*)\}", ir)
        if not stages:
            fail("no gpipe.stage in " + a.scheduled)
        for name, attrs in stages:
            times = dict((k, float(v)) for k, v in
                         re.findall(r"(\w+_time) = ([-0-9.eE+]+)", attrs))
            fwd = over.get("forward", 0) + sum(
                by_name[l]["forward"] for l in layers[name])
            bwd = over.get("backward", 0) + sum(
                by_name[l]["backward"] + by_name[l].get("recompute", 0)
                for l in layers[name])
            if not close(times.get("forward_time", -1), fwd):
                fail("%s: forward_time %s, the profile's %s" %
                     (name, times.get("forward_time"), fwd))
            if not close(times.get("backward_time", -1), bwd):
                fail("%s: backward_time %s, the profile's %s" %
                     (name, times.get("backward_time"), bwd))
            # The stage's parameters: those its forward reads.
            body = re.search(r"func\.func @%s_fwd\(.*?\n  \}" % name, ir,
                             re.S).group(0)
            read = set(re.findall(r'nn\.param @("?[^\s"]+"?)', body))
            step = m["optimizer"]["seconds_per_byte"] * sum(
                params[r.strip('"')] for r in read)
            if not close(times.get("step_time", -1), step):
                fail("%s: step_time %s, the profile's %s" %
                     (name, times.get("step_time"), step))
    print("profile ok")


if __name__ == "__main__":
    main()
