"""A float16 or bfloat16 check on torch is skipped only where torch has no
kernel for the op in that dtype, as running the forward shows; a derivative
that raises in the dtype (whatever its message names) is an error."""
import importlib.util

import pytest

from cli_paths import FIXTURES

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="--engine torch needs PyTorch")

HALF_OPS = str(FIXTURES / "halfprecision_ops.py")


def _results(run_json, op: str, dtypes: str):
    result, doc = run_json("ops", op, "--plugin", HALF_OPS, "--family", "cli_half",
                           "--engine", "torch", "--dtype", dtypes, "--check", "reverse")
    return result, {r["dtype"]: r for r in doc["results"]}


def test_a_float16_backward_that_raises_is_an_error_not_a_skip(run_json):
    # the backward's message names Half ("c10::Half != float"): the words once made
    # this a skip and the run exit 0
    result, by_dtype = _results(run_json, "half_mixed_backward", "float16,bfloat16,float32")
    assert by_dtype["float32"]["status"] == "passed"
    for dtype, spelled in (("float16", "Half"), ("bfloat16", "BFloat16")):
        assert by_dtype[dtype]["status"] == "error", by_dtype[dtype]
        assert f"c10::{spelled} != float" in by_dtype[dtype]["message"]
    assert result.exit_code == 1


def test_an_op_whose_forward_torch_has_no_kernel_for_is_skipped_saying_so(run_json):
    result, by_dtype = _results(run_json, "half_no_kernel", "float16,bfloat16,float32")
    assert by_dtype["float32"]["status"] == "passed"
    for dtype in ("float16", "bfloat16"):
        r = by_dtype[dtype]
        assert r["status"] == "skipped", r
        assert f"not in {dtype} on CPU (no kernel): its forward raises" in r["message"]
        assert r["message"].endswith("and runs in float32")
    assert "\"polar_cpu\" not implemented for 'Half'" in by_dtype["float16"]["message"]
    assert result.exit_code == 0


def test_an_op_that_runs_in_float16_passes(run_json):
    result, by_dtype = _results(run_json, "half_square", "float16,bfloat16")
    assert [r["status"] for r in by_dtype.values()] == ["passed", "passed"]
    assert result.exit_code == 0


def _subject(op: str, dtype: str):
    from adcheck.runner.checks import OpSubject
    from adcheck.runner.registry import OPINFO
    OPINFO.load_plugins([HALF_OPS])
    info = next(i for i in OPINFO.ops() if i.name == op)
    dtype = OPINFO.dtype(dtype)
    sample = next(iter(OPINFO.samples(info, dtype)))
    return OpSubject(OPINFO, info, sample, dtype, "torch")


@pytest.mark.parametrize("message", [
    "RuntimeError: expected m1 and m2 to have the same dtype, but got: c10::Half != float",
    "TypeError: Got unsupported ScalarType ComplexHalf",
    "\"polar_cpu\" not implemented for 'Half'",
])
def test_a_message_naming_the_dtype_is_no_evidence_by_itself(message):
    # the forward of half_square runs in float16: no message makes its error a skip
    assert _subject("half_square", "float16").unsupported(message) is None


def test_the_forward_decides_whatever_the_message_says():
    reason = _subject("half_no_kernel", "float16").unsupported("an unrelated message")
    assert reason is not None and "its forward raises NotImplementedError" in reason
