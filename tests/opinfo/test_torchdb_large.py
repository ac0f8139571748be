"""The op_db samples that timed out at 300 s in the whole sweep now get a
verdict in seconds (issue 18): sort's 8,000-element sample 0, a permutation
(compressed from its listed pattern into one group), and ctc_loss's 16
losses of 16,000 log-probabilities (a wide Jacobian, probed with every row
of the formula). Both pass, as torch's own gradcheck passes them in
PyTorch's test; what each plan could miss is in the report."""
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch", reason="op_db samples are torch's; torch is not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

from adcheck.runner.checks import Policy, check_sample  # noqa: E402
from adcheck.runner.torchregistry import TorchRegistry  # noqa: E402


def _result(op: str, index: int, check: str):
    registry = TorchRegistry()
    entry = registry.get(op)
    sample = registry.samples(entry, torch.float64, index)[0]
    settings = SimpleNamespace(registry=registry, checks=(check,),
                               policy=Policy(precise=True, engine="torch"))
    ((result, report),) = check_sample(entry, sample, torch.float64, settings, keep_reports=True)
    return sample, result, report


def test_sort_of_8000_elements_is_one_group():
    sample, result, report = _result("sort", 0, "reverse")
    assert sample.input.numel() == 8000
    assert result.status == "passed", result.message
    assert result.plan == "compressed"
    assert "listed" in report.coverage["reverse"] and "in 1 groups" in report.coverage["reverse"]


def test_ctc_loss_is_probed_with_every_row():
    sample, result, report = _result("nn.functional.ctc_loss", 0, "reverse")
    assert tuple(sample.input.shape) == (50, 16, 20)
    assert result.status == "passed", result.message
    assert result.plan == "probed"
    assert result.escape["reverse"] < 1e-12
    assert report.counts["vjp"] < 200   # the 16 rows (and the pattern's reading), not 16,000
