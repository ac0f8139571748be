"""Who is right, for each kind of disagreement the op_db survey found.

Each case rebuilds one sample (op, dtype, sample index) through
``opinfo.torchdb`` and measures, with torch directly and with mpmath where a
formula's value is disputed, the fact that settles the disagreement between
torch's gradcheck and adcheck's. No adcheck code judges itself here.

    python bench/opdb_evidence.py            # markdown on stdout
    python bench/opdb_evidence.py round      # only the cases whose class matches
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CASES = []


def case(cls: str, op: str, dtype: str, index: int):
    """Register an evidence function for the class ``cls`` with its reproducer."""
    def register(fn):
        CASES.append((cls, op, dtype, index, fn))
        return fn
    return register


def _call(op: str, dtype: str, index: int):
    from adcheck.opinfo import torchdb
    entry = torchdb.get(op)
    sample = entry.sample(index, dtype)
    return entry, sample, entry.call(sample)


@case("non-differentiable output", "native_layer_norm", "float64", 0)
def non_differentiable(entry, sample, call):
    out = call.func(*call.inputs)
    flags = [bool(o.requires_grad) for o in out]
    fns = [type(o.grad_fn).__name__ if o.grad_fn is not None else None for o in out]
    return "torch", [
        f"outputs' requires_grad: {flags}; grad_fn: {fns}",
        "torch returns the saved mean and inverse standard deviation (outputs 1 and 2) "
        "without a graph: its derivative formulas declare them non-differentiable, and its "
        "gradcheck checks differentiable outputs only. They do depend on the input, but "
        "no gradient is promised for them, so adcheck's 'output that does not require "
        "grad depends on an input' is a false alarm for outputs torch declares so."]


@case("reentrancy (bit for bit)", "ormqr", "complex128", 0)
def reentrancy(entry, sample, call):
    import torch
    inputs = call.inputs
    out = call.func(*inputs)
    n = out.numel()
    eye = torch.eye(n, dtype=out.dtype).reshape(n, *out.shape)

    def batched(vectors):
        return torch.autograd.grad(out, inputs, vectors, retain_graph=True,
                                   is_grads_batched=True)

    def diff(a, b):
        return max(float((x - y[: len(x)]).abs().max()) for x, y in zip(a, b))
    extra = torch.randn(3, *out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(0))
    same = diff(batched(eye), batched(eye))
    more = diff(batched(eye), batched(torch.cat([eye, extra])))
    rows = [torch.autograd.grad(out, inputs, eye[i], retain_graph=True) for i in range(n)]
    again = [torch.autograd.grad(out, inputs, eye[i], retain_graph=True) for i in range(n)]
    twice = max(float((a - b).abs().max()) for r, s in zip(rows, again) for a, b in zip(r, s))
    return "torch", [
        f"the same batch of {n} unit grad_outputs twice: max difference {same:.1e}",
        f"one vjp per row, twice: max difference {twice:.1e}",
        f"the same {n} rows in a batch of {n} and in a batch of {n + 3}: max difference "
        f"{more:.1e}",
        "torch's backward is reentrant (the same computation repeated is bit-identical). "
        "adcheck's two 'identical' reverse passes are batched with different companions "
        "(the first batch also carries the scaling and undefined-grad probes), and a "
        "batched matmul of another batch size rounds differently: adcheck compares two "
        "different computations with nondet_tol=0, a false alarm."]


@case("storage layout (as_strided of a view)", "as_strided.partial_views", "float64", 1)
def storage_layout(entry, sample, call):
    x = call.inputs[0]
    fresh = x.detach().clone()
    on_view = call.func(x.detach()).flatten().tolist()
    on_copy = call.func(fresh).flatten().tolist()
    import torch
    jac = torch.autograd.functional.jacobian(call.func, x)
    return "torch", [
        f"the input is a view at storage offset {x.storage_offset()} of a "
        f"{x.untyped_storage().nbytes() // x.element_size()}-element base",
        f"op on the input itself: {[round(v, 4) for v in on_view]}",
        f"op on a contiguous copy with the same values: {[round(v, 4) for v in on_copy]}",
        f"torch's Jacobian with respect to the view: all zero = "
        f"{bool((jac == 0).all())} (the strided window lies outside the view)",
        "as_strided reads storage, not values: the output depends on where the input "
        "lives. torch perturbs the input in place and agrees with its zero Jacobian; "
        "adcheck evaluates perturbed copies, which live elsewhere, so its finite "
        "differences see a different function: a false alarm."]


@case("formula precision (torch bug)", "nn.functional.hardsigmoid", "float64", 0)
def hardsigmoid(entry, sample, call):
    import mpmath
    import torch
    x = call.inputs[0]
    inside = (x.detach().abs() < 3).flatten()
    grad, = torch.autograd.grad(call.func(x).sum(), x)
    grad = grad.flatten()[inside]
    mpmath.mp.dps = 40
    exact = mpmath.mpf(1) / 6
    rel = abs((mpmath.mpf(float(grad[0])) - exact) / exact)
    f32 = float(torch.tensor(1 / 6, dtype=torch.float32))
    return "adcheck", [
        f"d/dx hardsigmoid(x) = 1/6 on (-3, 3); torch's float64 backward gives "
        f"{sorted(set(grad.tolist()))} at the sample's {int(inside.sum())} entries there",
        f"mpmath: 1/6 = {mpmath.nstr(exact, 20)}; relative error of torch's value "
        f"{mpmath.nstr(rel, 3)}; float32(1/6) = {f32!r}",
        "the backward multiplies by the float32 constant 1/6 in double precision: a real "
        "torch formula bug, 3e-8 relative, far below gradcheck's rtol=1e-3."]


@case("discontinuity straddled", "round.decimals_3", "float64", 0)
def discontinuity(entry, sample, call):
    import numpy as np
    x = call.inputs[0].detach().numpy().ravel()
    jumps = (np.floor(x * 1e3 - 0.5) + 0.5) / 1e3
    distance = np.minimum(np.abs(x - jumps), np.abs(x - jumps - 1e-3))
    first_step = np.maximum(np.abs(x) / 32, 2.0 ** -11)
    crossed = int((distance < first_step).sum())
    return "torch", [
        f"round(x, decimals=3) is piecewise constant with jumps every 1e-3; its "
        f"derivative is 0 wherever it exists, which is what torch's formula returns",
        f"{crossed} of {x.size} entries lie closer to a jump than the first Richardson "
        f"step (|x|/32, at least 2^-11 = 4.9e-4), so the wide differences there measure a "
        f"jump, not a slope",
        "adcheck's precise mode reports a formula error where the function has none: a "
        "false alarm (op_db skips this op's gradient tests, so the runner reports it as a "
        "known failure)."]


@case("rounding noise in a zero imaginary part", "masked.var", "complex128", 0)
def rounding_noise(entry, sample, call):
    import mpmath
    import torch
    x = call.inputs[0].detach()
    out = call.func(x)
    values = [complex(v) for v in x.flatten().tolist()]
    mpmath.mp.dps = 40
    mean = mpmath.fsum(mpmath.mpc(v) for v in values) / len(values)
    exact = mpmath.fsum(abs(mpmath.mpc(v) - mean) ** 2 for v in values)
    rows = []
    for k in (4, 8, 12, 16):
        h = 2.0 ** -k
        plus, minus = x.clone(), x.clone()
        plus.view(-1)[1] += h
        minus.view(-1)[1] -= h
        slope = (call.func(plus).imag - call.func(minus).imag).item() / (2 * h)
        rows.append(f"h=2^-{k}: {slope:.1e}")
    return "torch", [
        f"the op returns a complex128 scalar {complex(out.item()):.6g}: the variance of "
        f"complex values is real, and its imaginary part is rounding noise",
        f"mpmath: sum |x - mean|^2 = {mpmath.nstr(exact, 12)} has imaginary part "
        f"{mpmath.nstr(mpmath.im(mpmath.mpc(exact)), 3)} exactly, so every derivative of the "
        "imaginary part is 0, which is torch's analytical value",
        "central differences of the imaginary part at input entry 1 (real axis): "
        + ", ".join(rows) + ": noise over h, growing as h shrinks",
        "adcheck estimates a difference's rounding noise from the values it subtracts (about "
        "1e-17 here) instead of from the terms they were computed from (about 50): its "
        "tolerance is too small for a structurally zero part, a false alarm."]


@case("infinite inputs", "torch.ops.aten._safe_softmax.default", "float64", 0)
def infinite_inputs(entry, sample, call):
    import torch
    x = call.inputs[0].detach()
    jac = torch.autograd.functional.jacobian(call.func, x)
    inf = x.isinf()
    return "torch", [
        f"{int(inf.sum())} of {x.numel()} input entries are -inf (whole slices of them: "
        "_safe_softmax returns 0 there instead of NaN)",
        f"torch's Jacobian has {int(jac.isnan().sum())} NaN entries; its columns for the "
        f"-inf inputs are all zero: {bool((jac.reshape(x.numel(), -1)[:, inf.flatten()] == 0).all())}"
        " (the limit of the derivative as an input goes to -inf)",
        "-inf + h is -inf for any finite h, so torch's differences there are 0 and agree; "
        "adcheck's Richardson step is |x|/32 = inf, whose differences are NaN, and its "
        "tolerance becomes NaN: a false alarm."]


@case("low-precision output", "float", "float64", 0)
def low_precision(entry, sample, call):
    import torch
    x = call.inputs[0].detach().flatten()[:4]
    eps = 1e-6
    fd = ((x + eps).float().double() - (x - eps).float().double()) / (2 * eps)
    grad, = torch.autograd.grad(call.func(call.inputs[0]).sum(), call.inputs[0])
    return "adcheck (precise)", [
        f"the op casts float64 to float32; its derivative is 1 and torch's vjp returns "
        f"{sorted(set(grad.flatten().tolist()))}",
        f"central differences with torch's eps=1e-6 at the first inputs {x.tolist()}: "
        f"{[round(v, 4) for v in fd.tolist()]}: float32 spacing there (about "
        f"{float(torch.finfo(torch.float32).eps * x.abs().max()):.1e}) is comparable to eps",
        "torch's gradcheck (and adcheck's gradcheck with the same eps) cannot difference a "
        "float32 output that finely; op_db expects the test to fail. adcheck's precise mode "
        "takes steps of |x|/32 with an error estimate and passes: the formula is right."]


@case("ZeroTensor", "sgn", "float64", 0)
def zero_tensor(entry, sample, call):
    import torch
    out = call.func(*call.inputs)
    grad, = torch.autograd.grad(out, call.inputs, torch.ones_like(out))
    return "torch", [
        f"torch's vjp of sgn on real inputs is a ZeroTensor: {torch._is_zerotensor(grad)}; "
        "a ZeroTensor is an exact zero, the derivative of sign away from 0",
        "adcheck converts gradients to NumPy and a ZeroTensor refuses (\"Cannot convert a "
        "ZeroTensor to numpy\"): an adcheck error, not a verdict; materialising it as zeros "
        "gives the right Jacobian."]


@case("memory", "nn.functional.ctc_loss", "float64", 0)
def memory(entry, sample, call):
    out = call.func(*call.inputs)
    n_in = sum(t.numel() for t in call.inputs)
    jacobian = out.numel() * n_in * 8
    asked = 16 * n_in * n_in * 8
    return "no dispute (adcheck gives no verdict)", [
        f"{n_in} input coordinates, {out.numel()} outputs: the whole Jacobian is "
        f"{jacobian / 2**20:.1f} MiB",
        f"adcheck's batched Richardson evaluation stacks every perturbed copy of the input at "
        f"once: 16 levels x {n_in} coordinates x {n_in} entries = {asked / 2**30:.1f} GiB",
        "torch's fast mode perturbs one random direction and needs a few copies; adcheck "
        "needs its perturbations in chunks under a memory budget."]


@case("timeout", "nn.functional.adaptive_avg_pool3d", "float64", 1)
def timeout(entry, sample, call):
    import time
    start = time.perf_counter()
    for _ in range(20):
        call.func(*call.inputs)
    one = (time.perf_counter() - start) / 20
    n_in = sum(t.numel() for t in call.inputs)
    return "no dispute (adcheck gives no verdict)", [
        f"{n_in} input coordinates; one call takes {one * 1e3:.2f} ms",
        f"Richardson needs at least 2 x 8 evaluations per coordinate: {16 * n_in} calls "
        f"(about {16 * n_in * one:.0f} s at this rate, one at a time), before the "
        f"{out_numel(call)} vjps of the reverse Jacobian and the batched-grad check; torch's "
        "fast mode differences one random direction, a handful of calls",
        "a timeout (120 s in the survey), not a disagreement about the formula."]


def out_numel(call) -> int:
    out = call.func(*call.inputs)
    return sum(o.numel() for o in (out if isinstance(out, (tuple, list)) else (out,)))


@case("torch formula error known to op_db", "native_group_norm", "float64", 0)
def group_norm(entry, sample, call):
    import torch
    x = call.inputs[0]
    out = call.func(*call.inputs)
    grad = torch.autograd.grad(out[1].sum(), x, allow_unused=True, retain_graph=True)[0]
    h = 1e-6
    plus, minus = x.detach().clone(), x.detach().clone()
    plus.view(-1)[0] += h
    minus.view(-1)[0] -= h
    rest = call.inputs[1:]
    slope = ((call.func(plus, *rest)[1] - call.func(minus, *rest)[1]) / (2 * h)).flatten()
    return "both (torch's formula is wrong)", [
        f"outputs' requires_grad: {[bool(o.requires_grad) for o in out]} (the group mean "
        "and inverse std are declared differentiable)",
        f"d mean / d x[0] by differences: {[round(v, 4) for v in slope.tolist()]} (1/9: a "
        f"group of 9 entries); torch's vjp of the mean: {grad}",
        "torch's backward ignores the gradients of outputs 1 and 2: both gradchecks fail, "
        "and op_db expects test_fn_grad to fail."]


def main(argv=None) -> int:
    import torch
    torch.set_num_threads(1)     # as in the survey's workers
    wanted = (argv if argv is not None else sys.argv[1:])
    print("# Evidence for the op_db survey's disagreement classes\n")
    for cls, op, dtype, index, fn in CASES:
        if wanted and not any(w in cls or w in op for w in wanted):
            continue
        entry, sample, call = _call(op, dtype, index)
        right, lines = fn(entry, sample, call)
        print(f"## {cls}: `{op}` {dtype} sample {index}\n")
        print(f"Right: **{right}**.\n")
        for line in lines:
            print(f"- {line}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
