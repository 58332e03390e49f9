#!/usr/bin/env python3
# README: regenerate the CSV files and manifest.json next to this script with
#   python3 -m venv /tmp/venv-torch && /tmp/venv-torch/bin/pip install torch
#   /tmp/venv-torch/bin/python test/Schedules/PyTorch/generate_pytorch_schedules.py
# (no GPU and no process group needed). The stored files were made with
# torch 2.15.0 (PyPI wheel 2.15.0+cu132); manifest.json records the version
# that wrote them. Neither the build nor the tests need PyTorch.
"""Stores the pipeline schedules of torch.distributed.pipelining as CSV.

For each schedule class and each (K ranks, V stages per rank, M micro-batches)
in CONFIGS, builds the class with stand-in stage objects (only the attributes
the constructors read: stage_index, num_stages, group_size, group_rank,
submod) and writes

  <name>_k<K>_v<V>_m<M>.csv        the compute-only order, `pipeline_order`:
                                   one line per rank, empty cells for the idle
                                   slots the class inserts; for the
                                   single-stage classes also the REDUCE_GRAD
                                   and WAIT_REDUCE_GRAD the class appends.
  <name>_k<K>_v<V>_m<M>_comms.csv  (multi-stage classes, V = 2) the lowered
                                   order, `pipeline_order_with_comms`, with
                                   the library's own SEND/RECV, WAIT_SEND,
                                   UNSHARD/RESHARD and REDUCE_GRAD cells.

Files are written the way the library's `_dump_csv` writes them (Python's csv
module: CRLF line ends, `None` as an empty cell); the multi-stage classes
write through `_dump_csv` itself. manifest.json lists every file with its
class, K, V, M and whether it includes communication, and every attempted
configuration the class rejected, with the message.

The multi-stage classes compute every rank's order in their constructor, so
the stage objects of rank 0 suffice; the single-stage classes build every
rank's order from `num_stages` alone.
"""

import csv
import json
import logging
import os
import sys
import warnings

# torch warns on import when NumPy is absent; the schedules do not need it.
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)

import torch  # noqa: E402
from torch.distributed.pipelining import schedules  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# (get_schedule_class name, stages per rank V, list of (K, M)). Some entries
# are outside a class's constraints on purpose, to record what it rejects.
SINGLE = ["GPipe", "1F1B"]
MULTI_LOOP = ["Interleaved1F1B", "InterleavedZeroBubble"]
MULTI_V = ["ZBVZeroBubble", "DualPipeV"]
RANKS = [2, 4]
MICROBATCHES = [4, 8]

CONFIGS = []
for name in SINGLE:
    for k in RANKS:
        for m in MICROBATCHES:
            CONFIGS.append((name, k, 1, m))
    CONFIGS.append((name, 4, 1, 2))  # fewer micro-batches than ranks
for name in MULTI_LOOP:
    for k in RANKS:
        for v in [2, 3, 4]:
            for m in MICROBATCHES:
                CONFIGS.append((name, k, v, m))
    CONFIGS.append((name, 4, 2, 9))  # M not a multiple of the rounds
for name in MULTI_V:
    for k in RANKS:
        for m in MICROBATCHES:
            CONFIGS.append((name, k, 2, m))
    CONFIGS.append((name, 2, 3, 8))  # three stages per rank

# The lowered order with communication is stored for these stages per rank.
COMMS_V = {2}


class StandInStage:
    """The attributes of a pipeline stage the schedule constructors read."""

    def __init__(self, stage_index, num_stages, group_size, group_rank):
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = group_rank
        self.submod = None
        self.stage_index_to_group_rank = {}


def rank0_stages(name, k, v):
    """The stage indices rank 0 holds: round-robin, or V-shaped for ZBV."""
    if name in MULTI_V:
        # Rank r holds r and 2K-1-r (for V = 2); other V are rejected anyway.
        return [0, v * k - 1] if v == 2 else [s * k for s in range(v)]
    return [s * k for s in range(v)]


def build(name, k, v, m):
    cls = schedules.get_schedule_class(name)
    n = k * v
    if name in SINGLE:
        return cls(StandInStage(0, n, k, 0), m)
    stages = [StandInStage(s, n, k, 0) for s in rank0_stages(name, k, v)]
    return cls(stages, m)


def write_rows(path, order):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        for rank in sorted(order):
            writer.writerow(order[rank])


def main():
    version = torch.__version__
    files = []
    rejected = []
    for name, k, v, m in CONFIGS:
        try:
            schedule = build(name, k, v, m)
        except Exception as e:  # the class's own constraint checks
            rejected.append({"class": "Schedule" + name, "K": k, "V": v,
                             "M": m, "error": f"{type(e).__name__}: {e}"})
            continue
        stem = f"{name.lower()}_k{k}_v{v}_m{m}"
        entry = {"class": "Schedule" + name, "K": k, "V": v, "M": m,
                 "num_stages": k * v, "torch": version}
        compute = stem + ".csv"
        if name in SINGLE:
            write_rows(os.path.join(HERE, compute), schedule.pipeline_order)
        else:
            schedule._dump_csv(os.path.join(HERE, compute),
                               format="compute_only")
        files.append(dict(entry, file=compute, comms=False))
        if name not in SINGLE and v in COMMS_V:
            comms = stem + "_comms.csv"
            schedule._dump_csv(os.path.join(HERE, comms),
                               format="compute_comms")
            files.append(dict(entry, file=comms, comms=True))
    # JSON with one file or rejection per line.
    def rows(items):
        return ",\n".join("  " + json.dumps(i, sort_keys=True) for i in items)

    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        f.write('{"generator": "generate_pytorch_schedules.py",\n')
        f.write(f' "torch": {json.dumps(version)},\n')
        f.write(' "files": [\n' + rows(files) + "\n ],\n")
        f.write(' "rejected": [\n' + rows(rejected) + "\n ]}\n")
    print(f"torch {version}: wrote {len(files)} files, "
          f"{len(rejected)} configurations rejected", file=sys.stderr)


if __name__ == "__main__":
    main()
