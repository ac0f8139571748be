"""What a kernel check costs, at the zoo's sizes and at a model's.

Best of three ``kernels.check`` calls (after one to warm up) of a few of the
zoo's correct kernels (``bench/kernels_zoo.py``): the RMS norm at the zoo's
4 x 32 and at 3 x 256 features, tanh-GELU at the zoo's 64 inputs, and
torch's silu at 4 x 256. To compare two versions, run it with each on the
path (``PYTHONPATH=<an older checkout's parent>``); the numbers are in
bench/kernels.md.

    python bench/kernels_cost.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernels_zoo import _gelu, _rms_norm, gelu_inputs, gelu_reference, rms_norm_inputs  # noqa: E402
from kernels_zoo import rms_norm_reference  # noqa: E402

from adcheck.gradcheck import kernels  # noqa: E402


def _wide_rms(dtype, g):
    return (torch.randn(3, 256, generator=g).to(dtype).requires_grad_(),
            (1 + 0.1 * torch.randn(256, generator=g)).to(dtype).requires_grad_())


def _activations(dtype, g):
    return ((2 * torch.randn(4, 256, generator=g)).to(dtype).requires_grad_(),)


CASES = [
    ("RMS norm, 4 x 32", _rms_norm(None), rms_norm_reference, rms_norm_inputs),
    ("RMS norm, 3 x 256", _rms_norm(None), rms_norm_reference, _wide_rms),
    ("tanh-GELU, 64", _gelu(None), gelu_reference, gelu_inputs),
    ("torch silu, 4 x 256", F.silu, lambda x: x * torch.sigmoid(x), _activations),
]


def main() -> None:
    print(f"adcheck from {Path(kernels.__file__).parents[2]}")
    print("| kernel | dtype | s (best of 3) |")
    print("|---|---|---|")
    for name, kernel, reference, inputs in CASES:
        for dtype in (torch.bfloat16, torch.float16):
            args = inputs(dtype, torch.Generator().manual_seed(0))
            kernels.check(kernel, args, against=reference)
            times = []
            for _ in range(3):
                start = time.perf_counter()
                kernels.check(kernel, args, against=reference)
                times.append(time.perf_counter() - start)
            print(f"| {name} | {str(dtype).removeprefix('torch.')} | {min(times):.3f} |",
                  flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
