"""Evidence for the known failures the built-in registry declares against torch's
own formulas (``torch_*``): each is torch raising by itself, without adcheck,
so that a declaration outlives only as long as the torch bug it names (once
torch is fixed, the check passes and ``adcheck ops`` lists it as STALE).
And the sweep of those ops on torch ends with no error.
"""
import pytest

torch = pytest.importorskip("torch", reason="these known failures are torch's own")

from adcheck.opinfo import get  # noqa: E402


def test_scatter_double_backward_raises_in_torch_when_src_is_larger_than_index():
    x = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)
    src = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([[4, 0], [1, 3]])
    for op in (torch.scatter, torch.scatter_add):
        with pytest.raises(RuntimeError, match="invalid gradient at index 1"):
            torch.autograd.gradgradcheck(lambda a, s: op(a, 1, index, s), (x, src))
    declared = {kf.check for name in ("scatter", "scatter_add")
                for kf in get(name).known_failures}
    assert declared == {"torch_reverse", "torch_gradgrad"}


def test_these_ops_sweep_on_torch_with_no_error(run_json):
    # conj and linalg.solve return lazily conjugated tensors, which refuse numpy():
    # reading their values must resolve the conjugation, not error; view_as_real's
    # empty sample is handed gradients laid out as torch lays out an empty tensor
    # (torch.from_numpy gives it zero strides, which view_as_real's backward refuses)
    result, doc = run_json("ops", "conj", "linalg.solve", "view_as_real", "scatter",
                           "scatter_add", "--engine", "torch", "--jobs", "1")
    statuses = {r["status"] for r in doc["results"]}
    assert "error" not in statuses and "failed" not in statuses, result.stdout
    assert result.exit_code == 0
