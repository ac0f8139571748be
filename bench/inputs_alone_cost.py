"""What the each-input-alone check (``verdict.alone``) adds to ``check()``.

    python bench/inputs_alone_cost.py            # 7 subjects, 7 interleaved repeats

Per subject, ``gradcheck.check`` (the command line's defaults: precise, reverse,
forward where there is a jvp, no explore pass) with ``check_inputs_alone`` on
and off, interleaved; medians of the wall times and their ratio. Prints; it
asserts nothing. The results are in bench/inputs_alone_cost.md.
"""
from __future__ import annotations

import statistics
import time

import torch

from adcheck.gradcheck import check


def _subjects():
    torch.manual_seed(0)

    def leaf(*shape):
        return torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    mlp = torch.nn.Sequential(*[m for _ in range(3) for m in (torch.nn.Linear(8, 8),
                                                               torch.nn.Tanh())]).double()
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).double()
    return [
        ("torch.mul (3x4, 3x4)", torch.mul, (leaf(3, 4), leaf(3, 4))),
        ("torch.atan2 (3x4, 4)", torch.atan2, (leaf(3, 4), leaf(4))),
        ("torch.sin (one input: not run)", torch.sin, (leaf(3, 4),)),
        ("F.linear (x, w, b)", torch.nn.functional.linear, (leaf(4, 5), leaf(3, 5), leaf(3))),
        ("Linear(5, 3) module", torch.nn.Linear(5, 3).double(), (leaf(4, 5),)),
        ("3-layer MLP module (6 parameters)", mlp, (leaf(4, 8),)),
        ("TransformerEncoderLayer(8) (12 parameters)", layer, (leaf(1, 3, 8),)),
    ]


def _time(func, inputs, alone: bool) -> float:
    start = time.perf_counter()
    report = check(func, inputs, precise=True, explore=False, seed=0, check_inputs_alone=alone)
    assert report.passed, report.message()
    return time.perf_counter() - start


def main(repeats: int = 7) -> None:
    torch.set_num_threads(1)
    print(f"{'subject':44s} {'off ms':>9s} {'on ms':>9s} {'on/off':>7s}")
    for name, func, inputs in _subjects():
        _time(func, inputs, True)   # (warm)
        off, on = [], []
        for _ in range(repeats):
            off.append(_time(func, inputs, False))
            on.append(_time(func, inputs, True))
        a, b = statistics.median(off) * 1e3, statistics.median(on) * 1e3
        print(f"{name:44s} {a:9.2f} {b:9.2f} {b / a:7.3f}")


if __name__ == "__main__":
    main()
