"""opinfo.torchdb: PyTorch's op_db behind adcheck's registry protocol.

Cross-checked against torch itself: the checked call against the one torch's
own gradient-test helper (``TestGradients._check_helper``) builds and the
flags it passes, the op's output against torch's public functions, the
verdicts against torch's gradcheck. op_db is imported once per process.
"""
import hashlib
import inspect
import subprocess
import sys
import unittest
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="opinfo.torchdb adapts PyTorch's op_db; "
                            "torch is not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

from adcheck.opinfo import torchdb  # noqa: E402
from adcheck.opinfo.torchdb import loader, skips  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

#: the ops of the protocol tests, and each one's output written with torch's public API
EXPECTED = {
    "sin": lambda s: torch.sin(s.input),
    "matmul": lambda s: torch.matmul(s.input, *s.args),
    "nn.functional.conv2d": lambda s: torch.nn.functional.conv2d(s.input, *s.args, **s.kwargs),
    "linalg.svd": lambda s: s.output_process_fn_grad(torch.linalg.svd(s.input, **s.kwargs)),
    "cat": lambda s: torch.cat(list(s.input), **s.kwargs),
    "linalg.eigh": lambda s: s.output_process_fn_grad(
        torch.linalg.eigh(s.input + s.input.mH, **s.kwargs)),
    "div.no_rounding_mode": lambda s: torch.div(s.input, *s.args, **s.kwargs),
}

#: prints a digest of samples (op, dtype, index) given on the command line; run here
#: and in a fresh process
DIGEST = """
import hashlib, sys, torch
from adcheck.opinfo import torchdb
def digest(value, h):
    if isinstance(value, torch.Tensor):
        h.update(value.detach().resolve_conj().contiguous().numpy().tobytes())
    elif isinstance(value, (list, tuple)):
        for v in value:
            digest(v, h)
    elif isinstance(value, dict):
        for k in sorted(value):
            h.update(k.encode()); digest(value[k], h)
    else:
        h.update(repr(value).encode())
def sample_digest(op, dtype, index):
    s = torchdb.get(op).sample(index, dtype)
    h = hashlib.sha256()
    digest((s.input, s.args, s.kwargs), h)
    return h.hexdigest()
if __name__ == "__main__":
    for spec in sys.argv[1:]:
        op, dtype, index = spec.split(",")
        print(sample_digest(op, dtype, int(index)))
"""
DIGESTED = ["cat,float64,1", "linalg.svd,complex128,3", "nn.functional.conv2d,float64,2"]


@pytest.fixture(scope="module")
def other_process():
    """The digests computed in a fresh process, started before this one imports op_db
    so that the two imports overlap."""
    proc = subprocess.Popen([sys.executable, "-c", DIGEST, *DIGESTED], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"PYTHONPATH": str(ROOT), "PATH": ""})
    yield proc
    if proc.poll() is None:
        proc.kill()


@pytest.fixture(scope="module")
def db(other_process):
    return torchdb.entries()


def test_importing_the_adapter_imports_neither_torch_nor_op_db():
    code = ("import sys, adcheck.opinfo.torchdb; "
            "print('torch' in sys.modules, '" + loader.OP_DB_MODULE + "' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_a_missing_expecttest_is_named_with_the_command_that_installs_it(monkeypatch):
    real = loader.importlib.util.find_spec
    monkeypatch.setattr(loader, "_cache", {})
    monkeypatch.setattr(loader.importlib.util, "find_spec",
                        lambda name, *a: None if name == "expecttest" else real(name, *a))
    assert loader.missing() == ["expecttest"]
    with pytest.raises(torchdb.TorchDbUnavailable, match=r'expecttest.*adcheck\[torch\]'):
        loader.op_db()


def test_every_op_db_opinfo_is_an_entry_or_excluded_with_a_reason(db):
    op_db = loader.op_db()
    names = [e.name for e in db]
    assert len(names) == len(set(names))
    assert len(db) + len(torchdb.excluded()) == len(op_db)
    no_autograd = {o.full_name for o in op_db if not o.supports_autograd}
    excluded = dict(torchdb.excluded())
    assert no_autograd <= set(excluded)
    assert all(reason for reason in excluded.values())
    assert all(torchdb.get(name) is entry for name, entry in zip(names, db))
    with pytest.raises(KeyError, match="did you mean 'linalg.svd'"):
        torchdb.get("linalg.svdd")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_protocol_and_the_checked_call(db, name):
    entry = torchdb.get(name)
    assert entry.name == entry.opinfo.full_name == name
    assert entry.family.startswith("torch") and entry.mpmath_ref is None
    assert torch.float64 in entry.dtypes and entry.supports("reverse", "float64")
    assert not entry.supports("reverse", torch.int64)
    with pytest.raises(ValueError, match="unknown mode"):
        entry.supports("sideways")
    sample = entry.sample(0, "float64")
    call = entry.call(sample)
    assert call.inputs and all(t.requires_grad for t in call.inputs)
    with torch.no_grad():
        got, expected = call.func(*call.inputs), EXPECTED[name](sample)
    got = got if isinstance(got, (tuple, list)) else (got,)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    assert len(got) == len(expected)
    assert all(torch.equal(a, b) for a, b in zip(got, expected))


def test_family_torch_name_and_dtype_names(db):
    families = {n: torchdb.get(n).family for n in ("nn.functional.conv2d", "sin", "add",
                                                   "sum", "linalg.svd", "matmul")}
    assert families == {"nn.functional.conv2d": "torch.nn.functional", "sin": "torch.unary",
                        "add": "torch.binary", "sum": "torch.reduction",
                        "linalg.svd": "torch.linalg", "matmul": "torch"}
    assert torchdb.get("nn.functional.conv2d").torch_name == "nn.functional.conv2d"
    assert torchdb.get("__rdiv__").torch_name == "Tensor.__rdiv__"
    assert torchdb.dtype_named("complex128") is torch.complex128
    with pytest.raises(ValueError, match="not a torch dtype"):
        torchdb.dtype_named("float65")


def test_tolerance_is_torchs_gradcheck_default_in_double_precision(db):
    defaults = inspect.signature(torch.autograd.gradcheck).parameters
    tol = torchdb.get("sin").tolerance("float64")
    assert (tol.atol, tol.rtol) == (defaults["atol"].default, defaults["rtol"].default)


def _torchs_calls(entry, check, samples):
    """What torch's gradient-test helper hands gradcheck for ``samples``: each call's
    inputs, keywords and the output of its function, taken at call time."""
    from torch.testing._internal.common_utils import TestGradients
    op, calls = entry.opinfo, []

    def record(fn, inputs, *rest, **kwargs):
        with torch.no_grad():
            calls.append((inputs, kwargs, fn(*inputs)))
        return True
    helper = {"reverse": ("gradcheck", {}),
              "forward": ("gradcheck", dict(check_forward_ad=True, check_backward_ad=False,
                                            check_batched_grad=False,
                                            check_batched_forward_grad=entry.
                                            check_batched_forward_grad)),
              "gradgrad": ("bwgrad_bwgrad", {}), "fwgrad_bwgrad": ("fwgrad_bwgrad", {})}
    kind, extra = helper[check]
    with mock.patch.object(torch.autograd, "gradcheck", record), \
            mock.patch.object(torch.autograd, "gradgradcheck", record), \
            mock.patch.object(type(op), "sample_inputs",
                              lambda *a, **k: iter([s.sample for s in samples])):
        TestGradients("run")._check_helper("cpu", torch.float64, op, op.get_op(), kind,
                                           **extra)
    return calls


@pytest.mark.parametrize("name", ["linalg.eigh", "cat", "nn.functional.conv2d",
                                  "div.no_rounding_mode"])
@pytest.mark.parametrize("check", ["reverse", "forward", "gradgrad", "fwgrad_bwgrad"])
def test_the_call_and_flags_are_those_of_torchs_gradient_tests(db, name, check):
    entry = torchdb.get(name)
    assert entry.supports(check, "float64")
    samples = [s for _, s in zip(range(2), entry.sample_inputs("float64"))]
    calls = _torchs_calls(entry, check, samples)
    runs = entry.torch_runs(check)
    assert len(calls) == len(samples) * len(runs)
    for k, (inputs, kwargs, output) in enumerate(calls):
        call = entry.call(samples[k // len(runs)])
        assert kwargs == runs[k % len(runs)][1]
        assert len(inputs) == len(call.inputs)
        assert all(a is b for a, b in zip(inputs, call.inputs))
        with torch.no_grad():
            ours = call.func(*call.inputs)
        ours = ours if isinstance(ours, (tuple, list)) else (ours,)
        output = output if isinstance(output, (tuple, list)) else (output,)
        assert all(torch.equal(a, b) for a, b in zip(ours, output))


@pytest.mark.parametrize("name", ["cat", "linalg.svd"])
def test_a_sample_rebuilds_alone_whatever_the_rng_state(db, name):
    entry = torchdb.get(name)
    listed = [s for _, s in zip(range(4), entry.sample_inputs("float64"))]
    torch.manual_seed(987)
    np.random.seed(987)
    before = torch.random.get_rng_state()
    alone = entry.sample(3, "float64")
    assert torch.equal(torch.random.get_rng_state(), before)   # the caller's stream is kept
    assert alone.index == listed[3].index == 3
    pairs = list(zip(alone.tensors(), listed[3].tensors()))
    assert pairs and all(torch.equal(a, b) for a, b in pairs)


def test_samples_are_identical_in_another_process(db, other_process):
    out, err = other_process.communicate(timeout=300)
    assert other_process.returncode == 0, err
    here: dict = {}
    exec(DIGEST, here)
    mine = [here["sample_digest"](op, dtype, int(i))
            for op, dtype, i in (spec.split(",") for spec in DIGESTED)]
    assert out.split() == mine


def test_complex_samples_are_followed_by_their_conjugates_as_in_torchs_tests(db):
    entry = torchdb.get("sin")
    samples = list(entry.sample_inputs("complex128"))
    half = len(samples) // 2
    assert len(samples) == 2 * half and half >= 1
    for original, conj in zip(samples[:half], samples[half:]):
        assert conj.conjugated and conj.input.is_conj() and conj.input.requires_grad
        assert torch.equal(conj.input.resolve_conj(), original.input.conj().resolve_conj())
    assert len(list(entry.sample_inputs("float64"))) == half


def test_decorate_infos_become_known_failures_of_the_checks_their_tests_run():
    from torch.testing._internal.common_device_type import (onlyCUDA, skipCPUIfNoLapack,
                                                            tol, toleranceOverride)
    from torch.testing._internal.opinfo.core import DecorateInfo
    skip = unittest.skip
    fake = SimpleNamespace(decorators=(
        DecorateInfo(skip("slow on CPU"), "TestBwdGradients", "test_fn_grad",
                     dtypes=(torch.complex128,)),
        DecorateInfo(unittest.expectedFailure, "TestFwdGradients", "test_forward_mode_AD"),
        DecorateInfo(skip("cuda only"), "TestBwdGradients", "test_fn_grad", device_type="cuda"),
        DecorateInfo(skip("not a gradient test"), "TestCommon", "test_out"),
        DecorateInfo(skip("inactive"), active_if=False),
        DecorateInfo(skip("in place"), "TestBwdGradients", "test_inplace_grad"),
        DecorateInfo(skip("older torch"), "TestGradients", "test_fn_gradgrad"),
        DecorateInfo(onlyCUDA, "TestFwdGradients"),
        toleranceOverride({torch.float64: tol(atol=1e-3, rtol=1e-4)}),
        skipCPUIfNoLapack,
    ))
    found = skips.declared(fake, "function")
    summary = [(k.check, k.kind, k.dtypes, k.reason) for k in found.known_failures]
    lapack = [] if torch._C.has_lapack else [("torch_reverse", "skip", None)]
    assert [s[:3] for s in summary if "Lapack" not in s[3]] == [
        ("torch_reverse", "skip", (torch.complex128,)),
        ("torch_forward", "xfail", None),
        ("torch_gradgrad", "skip", None),
        ("torch_forward", "skip", None), ("torch_fwgrad_bwgrad", "skip", None)]
    assert [s[:3] for s in summary if "Lapack" in s[3]][:1] == lapack
    assert "test_fn_grad on complex128: slow on CPU" in summary[0][3]
    assert "Only runs on cuda" in summary[3][3]
    assert found.tolerances == {torch.float64: (1e-3, 1e-4)}
    inplace = skips.declared(fake, "inplace").known_failures
    assert [(k.check, k.tests) for k in inplace if k.reason.endswith("in place")] == [
        ("torch_reverse", ("test_inplace_grad",))]


def test_op_db_skips_are_known_failures_of_the_torch_engine(db):
    cov = torchdb.get("cov")
    known = cov.known_failure("torch_reverse", "float64")
    assert known.kind == "xfail" and "test_fn_grad" in known.reason
    assert cov.known_failure("reverse", "float64") is None   # refengine names stay free
    abs_inplace = torchdb.get("abs_")
    assert abs_inplace.known_failure("torch_reverse", "complex128").kind == "skip"
    assert abs_inplace.known_failure("torch_reverse", "float64") is None
    assert torchdb.get("abs").known_failure("torch_reverse", "complex128") is None


def test_the_inplace_variant_runs_on_a_copy(db):
    entry = torchdb.get("abs_")
    sample = next(iter(entry.sample_inputs("float64")))
    call = entry.call(sample)
    before = sample.input.detach().clone()
    with torch.no_grad():
        out = call.func(*call.inputs)
    assert torch.equal(out, before.abs()) and torch.equal(sample.input, before)
    assert not entry.supports("fwgrad_bwgrad")


@pytest.mark.parametrize("name,dtype,index", [
    ("mul", "complex128", 2), ("matmul", "float64", 0), ("cat", "complex128", 0),
    ("linalg.eigh", "float64", 0), ("addmm", "float64", 0)])
def test_adcheck_through_the_adapter_gives_torchs_verdict(db, name, dtype, index):
    from adcheck import gradcheck
    entry = torchdb.get(name)
    assert entry.torch_verdict(entry.sample(index, dtype), "reverse").passed
    call = entry.call(entry.sample(index, dtype))
    report = gradcheck.check(call.func, call.inputs, seed=0,
                             **entry.adcheck_options("reverse", dtype, precise=True))
    assert report.passed, report.message()
    (fn, flags), = entry.torch_runs("reverse")
    assert getattr(gradcheck, fn)(call.func, call.inputs, seed=0, **flags)


def test_the_reproducer_reruns_the_check(db, capsys):
    exec(torchdb.get("mul").reproducer(2, "complex128"), {})
    assert capsys.readouterr().out.strip() == "mul: all checks passed"


def test_hardsigmoids_single_precision_sixth_is_caught_where_torch_passes(db):
    # the survey's torch formula bug: the float64 backward multiplies by float32(1/6)
    from adcheck import gradcheck
    entry = torchdb.get("nn.functional.hardsigmoid")
    call = entry.call(entry.sample(0, "float64"))
    x = call.inputs[0]
    grad, = torch.autograd.grad(call.func(x).sum(), x)
    inside = grad[(x.detach().abs() < 3)]
    sixth32 = float(torch.tensor(1 / 6, dtype=torch.float32))
    assert inside.numel() and bool((inside == sixth32).all()) and sixth32 != 1 / 6
    assert entry.torch_verdict(entry.sample(0, "float64")).passed
    report = gradcheck.check(call.func, call.inputs, seed=0,
                             **entry.adcheck_options("reverse", "float64", precise=True))
    (failure,) = [f for f in report.failures if f.check == "reverse"]
    relative = abs(1 / 6 - sixth32) / (1 / 6)
    assert failure.max_error == pytest.approx(relative / 6, rel=0.5)


def test_seeds_are_a_stable_hash_of_name_dtype_and_index():
    from adcheck.opinfo.torchdb.sampling import sample_seed
    digest = hashlib.sha256(b"cat:float64:1").digest()[:4]
    assert sample_seed("cat", torch.float64, 1) == int.from_bytes(digest, "little")
