"""torch's batching rules are code that can be wrong: vmap of op_db's
index_fill sample 1 (a 0-dim input filled with a batched 0-dim value) returns
a wrong example 0, so finite differences built on it said 0 where the
derivative is 1 (a false alarm of ours in the whole-op_db sweep). A batch is
now checked against one plain call of its first example, and the loop runs
when they differ."""
import pytest

torch = pytest.importorskip("torch", reason="the case is torch's index_fill; torch is not "
                            "installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

from adcheck import gradcheck  # noqa: E402
from adcheck.opinfo import torchdb  # noqa: E402


def test_index_fill_with_a_batched_scalar_value_is_checked_right():
    entry = torchdb.get("index_fill")
    sample = entry.sample(1, torch.float64)
    call = entry.call(sample)
    x, value = (t.detach() for t in call.inputs)
    values = torch.stack([value, value + 1.0])
    mapped = torch.func.vmap(lambda v: call.func(x, v))(values)
    plain = [call.func(x, v) for v in values]
    if torch.equal(mapped[0], plain[0]):
        pytest.skip("this torch's batching rule for index_fill is right (the bug is fixed)")
    assert entry.torch_verdict(sample).passed       # torch's own gradcheck: right formula
    report = gradcheck.check(call.func, call.inputs, seed=0,
                             **entry.adcheck_options("reverse", torch.float64))
    assert report.passed, report.message()
    assert "batching rule gave another value" in report.batching["fallback"]
