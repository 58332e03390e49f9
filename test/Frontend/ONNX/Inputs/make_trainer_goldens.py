"""Make the golden data of gpipe-run's trainer: what PyTorch computes for
the same setups.

Writes, into the folder this script lives in:
  lr_schedules.json   -- torch.optim.lr_scheduler's learning rate at every
                         step for each --lr-schedule setup (make_lr_schedules)

Needs pip's torch (what users run today):
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install torch numpy
  /tmp/venv/bin/python make_trainer_goldens.py [maker...]

CI never runs this script; the files it writes are committed.
"""

import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def torch_schedule(optimizer, kind, lr, warmup, horizon, min_lr, step_size,
                   gamma):
    """The torch.optim.lr_scheduler chain equivalent to gpipe-run's
    --lr-schedule KIND --warmup-steps WARMUP --lr-decay-steps HORIZON
    --min-lr MIN_LR --lr-step-size STEP_SIZE --lr-gamma GAMMA."""
    sched = torch.optim.lr_scheduler
    decay_steps = horizon - warmup
    if kind == "constant":
        decay = sched.ConstantLR(optimizer, factor=1.0, total_iters=0)
    elif kind == "linear":
        decay = sched.LinearLR(optimizer, start_factor=1.0,
                               end_factor=min_lr / lr, total_iters=decay_steps)
    elif kind == "cosine":
        decay = sched.CosineAnnealingLR(optimizer, T_max=decay_steps,
                                        eta_min=min_lr)
    else:
        decay = sched.StepLR(optimizer, step_size=step_size, gamma=gamma)
    if warmup == 0:
        return decay
    # The warmup starts at lr / (W + 1) and reaches lr at step W + 1.
    warm = sched.LinearLR(optimizer, start_factor=1.0 / (warmup + 1),
                          end_factor=1.0, total_iters=warmup)
    return sched.SequentialLR(optimizer, [warm, decay], milestones=[warmup])


def make_lr_schedules():
    setups = [
        # kind, lr, warmup, horizon, min_lr, step_size, gamma, steps
        ("constant", 0.01, 0, 20, 0.0, 1, 0.1, 20),
        ("constant", 0.003, 5, 20, 0.0, 1, 0.1, 20),
        ("linear", 0.1, 0, 30, 0.0, 1, 0.1, 30),
        ("linear", 0.1, 4, 30, 0.01, 1, 0.1, 30),
        ("cosine", 0.001, 0, 25, 0.0, 1, 0.1, 25),
        ("cosine", 0.001, 10, 50, 1e-5, 1, 0.1, 50),
        ("cosine", 0.5, 1, 7, 0.05, 1, 0.1, 7),
        ("step", 0.1, 0, 30, 0.0, 7, 0.5, 30),
        ("step", 0.2, 3, 40, 0.0, 10, 0.1, 40),
    ]
    out = []
    for kind, lr, warmup, horizon, min_lr, step_size, gamma, steps in setups:
        param = torch.nn.Parameter(torch.zeros(1))
        optimizer = torch.optim.SGD([param], lr=lr)
        scheduler = torch_schedule(optimizer, kind, lr, warmup, horizon,
                                   min_lr, step_size, gamma)
        lrs = []
        for _ in range(steps):
            lrs.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        out.append({"schedule": kind, "lr": lr, "warmup_steps": warmup,
                    "decay_steps": horizon, "min_lr": min_lr,
                    "step_size": step_size, "gamma": gamma, "lrs": lrs})
    doc = {"producer": "make_trainer_goldens.py, torch " + torch.__version__,
           "setups": out}
    with open(os.path.join(HERE, "lr_schedules.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


MAKERS = {"make_lr_schedules": make_lr_schedules}


def main():
    names = sys.argv[1:] or list(MAKERS)
    for name in names:
        MAKERS[name]()


if __name__ == "__main__":
    main()
