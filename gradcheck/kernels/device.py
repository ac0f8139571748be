"""A kernel and its reference run where the inputs live, and their Jacobians.

Kernels (Triton, CUDA, fused torch code) often run on one device only, so
nothing here assumes the CPU: inputs are cast to a dtype on their own device
(``cast``), the float64 reference runs there unless the device has no
float64 (Apple's MPS: then on the CPU, ``wide_device``), and the Jacobians are
made with vjps and jvps whose seeds are made on the device. Only the products
come back to the CPU, a batch of rows at a time within the memory budget,
into the NumPy blocks the comparator reads (``reverse_blocks``,
``forward_blocks``). Real tensors only: a kernel is a real computation.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.autograd import forward_ad

from adcheck.gradcheck.core import budget as budgets


def device_of(inputs: tuple) -> torch.device:
    """The one device of the tensor inputs (``ValueError`` for several)."""
    devices = {x.device for x in inputs if isinstance(x, torch.Tensor)}
    if len(devices) != 1:
        found = ", ".join(sorted(str(d) for d in devices)) or "none"
        raise ValueError(f"the kernel's tensor inputs must be on one device; found {found}: "
                         "move them with .to(device)")
    return devices.pop()


def wide_device(device: torch.device) -> torch.device:
    """Where the float64 reference runs: ``device``, or the CPU when the device
    has no float64."""
    try:
        torch.zeros(1, dtype=torch.float64, device=device)
    except (RuntimeError, TypeError):
        return torch.device("cpu")
    return device


def floating(x) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def cast(inputs: tuple, dtype, device) -> tuple:
    """Fresh leaves: floating tensors in ``dtype`` on ``device`` (exact when
    widening), requiring grad as the originals do; other tensors moved only."""
    out = []
    for x in inputs:
        if floating(x):
            out.append(x.detach().to(device=device, dtype=dtype).requires_grad_(x.requires_grad))
        elif isinstance(x, torch.Tensor):
            out.append(x.detach().to(device=device))
        else:
            out.append(x)
    return tuple(out)


def nudged(inputs: tuple, rng, step: float) -> tuple:
    """The inputs that require grad moved by a relative ``step`` of random sign
    per coordinate, in float64 on their device (rounded later by ``cast``)."""
    out = []
    for x in inputs:
        if floating(x) and x.requires_grad:
            signs = torch.from_numpy(rng.choice([-1.0, 1.0], size=tuple(x.shape)))
            wide = x.detach().to(torch.float64)
            out.append((wide * (1 + step * signs.to(wide.device))).requires_grad_(True))
        else:
            out.append(x)
    return tuple(out)


def run(func, inputs: tuple) -> tuple:
    """``func(*inputs)`` as a tuple of its results."""
    result = func(*inputs)
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _rows_per_batch(budget: int, out: torch.Tensor, wrt: list) -> int:
    """How many vjps one batch holds: its seeds and its gradients."""
    per_row = out.numel() + sum(x.numel() for x in wrt)
    return max(1, budget // (budgets.SHARE * budgets.BYTES * max(per_row, 1)))


def _vjp_rows(out, wrt, seeds) -> list:
    """Gradients of ``out`` for a batch of ``seeds``, one tensor per input
    (rows first); vmapped when the backward allows it, else one by one."""
    try:
        grads = torch.autograd.grad(out, wrt, seeds, retain_graph=True, allow_unused=True,
                                    is_grads_batched=True)
    except Exception:  # noqa: BLE001 - a backward that vmap cannot batch runs row by row
        rows = [torch.autograd.grad(out, wrt, s, retain_graph=True, allow_unused=True)
                for s in seeds]
        grads = [None if rows[0][k] is None else torch.stack([r[k] for r in rows])
                 for k in range(len(wrt))]
    return [torch.zeros((len(seeds), *x.shape), dtype=x.dtype, device=x.device)
            if g is None else g for g, x in zip(grads, wrt)]


def reverse_blocks(outputs: tuple, inputs: tuple, diff_in: list, diff_out: list,
                   budget: int) -> dict:
    """``{(out_idx, in_idx): block}``: every row of every block by vjps with unit
    seeds made on the outputs' device, copied to float64 NumPy batch by batch."""
    wrt = [inputs[i] for i in diff_in]
    blocks = {}
    for o in diff_out:
        out = outputs[o]
        m = out.numel()
        for i in diff_in:
            blocks[o, i] = np.empty((m, inputs[i].numel()))
        for a, b in budgets.chunks(m, _rows_per_batch(budget, out, wrt)):
            seeds = torch.zeros((b - a, m), dtype=out.dtype, device=out.device)
            seeds[torch.arange(b - a), torch.arange(a, b)] = 1
            grads = _vjp_rows(out, wrt, seeds.reshape(b - a, *out.shape))
            for i, g in zip(diff_in, grads):
                blocks[o, i][a:b] = g.detach().reshape(b - a, -1).to("cpu", torch.float64).numpy()
    return blocks


def forward_blocks(func, inputs: tuple, diff_in: list, diff_out: list) -> dict:
    """``{(out_idx, in_idx): block}`` column by column from jvps (dual tensors
    on the inputs' device). Raises what the kernel raises without a jvp."""
    plain = tuple(x.detach() if isinstance(x, torch.Tensor) else x for x in inputs)
    blocks = {(o, i): np.empty((0, 0)) for o in diff_out for i in diff_in}
    for i in diff_in:
        n = plain[i].numel()
        columns = {o: [] for o in diff_out}
        for c in range(n):
            tangent = torch.zeros(n, dtype=plain[i].dtype, device=plain[i].device)
            tangent[c] = 1
            with forward_ad.dual_level():
                args = list(plain)
                args[i] = forward_ad.make_dual(plain[i], tangent.reshape(plain[i].shape))
                outs = run(func, tuple(args))
                for o in diff_out:
                    t = forward_ad.unpack_dual(outs[o]).tangent
                    column = (torch.zeros(outs[o].numel()) if t is None
                              else t.detach().reshape(-1).to("cpu", torch.float64))
                    columns[o].append(column.numpy())
        for o in diff_out:
            blocks[o, i] = np.stack(columns[o], axis=1) if n else np.zeros((outputs_size(
                func, plain, o), 0))
    return blocks


def outputs_size(func, inputs: tuple, out_idx: int) -> int:
    return run(func, inputs)[out_idx].numel()


def values(output: torch.Tensor) -> np.ndarray:
    """An output's values as a flat float64 NumPy array (a copy on the CPU)."""
    return output.detach().reshape(-1).to("cpu", torch.float64).numpy()
