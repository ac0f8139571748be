"""Ops torch has no complex kernel for are refused on complex tensors, as torch
refuses them, instead of computed by NumPy and differentiated by rules
written for real numbers (found by calling every registry op with a torch
name on complex inputs: softmax's, log_softmax's, mse_loss's and
layer_norm's vjps were the conjugates of the derivative; clamp's backward
raised "ge is not supported"; nan_to_num refused a recorded complex input in
its backward, torch in the forward). ``stack`` and ``cat`` of one tensor, rather
than a sequence, are refused as torch refuses them (NumPy iterated the rows,
and under vmap the batch, so a check of ``stack(x)`` crashed in reshaping).

torch is the oracle: the exception's type and message are torch's own."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

VALUES = np.random.default_rng(0).standard_normal((3, 4)) + \
    1j * np.random.default_rng(1).standard_normal((3, 4))

#: (name, the call on a module of functions (refengine or torch) and a tensor)
CALLS = [
    ("softmax", lambda M, x: M.softmax(x, -1)),
    ("log_softmax", lambda M, x: M.log_softmax(x, -1)),
    ("mse_loss", lambda M, x: M.nn.functional.mse_loss(x, x.flip(0))),
    ("mse_loss none", lambda M, x: M.nn.functional.mse_loss(x, x.flip(0), reduction="none")),
    ("layer_norm", lambda M, x: M.nn.functional.layer_norm(x, (4,))),
    ("clamp", lambda M, x: M.clamp(x, -1, 1)),
    ("clip", lambda M, x: M.clip(x, -1, 1)),
    ("dropout", lambda M, x: M.nn.functional.dropout(x, 0.5)),
    ("nan_to_num recorded", lambda M, x: M.nan_to_num(x)),
    ("stack of a tensor", lambda M, x: M.stack(x)),
    ("cat of a tensor", lambda M, x: M.cat(x)),
]


def _raised(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the exception is the observation
        return type(exc), str(exc)
    return None


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_refused_on_complex_as_torch_refuses(name, call, dtype):
    theirs = _raised(lambda: call(torch, torch.tensor(VALUES, dtype=getattr(torch, dtype),
                                                      requires_grad=True)))
    assert theirs is not None, f"torch {torch.__version__} computes {name} on {dtype} now"
    ours = _raised(lambda: call(E, E.tensor(VALUES, dtype=getattr(E, dtype),
                                            requires_grad=True)))
    assert ours is not None, f"refengine computes {name} on {dtype}; torch raises {theirs}"
    assert ours[0] is theirs[0]
    if name not in ("softmax", "log_softmax"):    # (their kernel's name is torch's last-dim one)
        assert ours[1] == theirs[1]


@pytest.mark.parametrize("name,call", CALLS[:9], ids=[c[0] for c in CALLS[:9]])
def test_the_same_calls_run_on_real_tensors(name, call):
    real = np.random.default_rng(2).standard_normal((3, 4))
    ours = call(E, E.tensor(real, requires_grad=True))
    theirs = call(torch, torch.tensor(real, requires_grad=True))
    if name != "dropout":     # (each draws its own mask)
        assert np.allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=1e-12)


def test_nan_to_num_of_complex_runs_where_nothing_is_recorded():
    for module in (E, torch):
        x = module.tensor(VALUES, requires_grad=True)
        with module.no_grad():
            assert module.nan_to_num(x).dtype == x.dtype
        assert module.nan_to_num(x.detach()).dtype == x.dtype
