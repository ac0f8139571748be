"""A module's nested outputs are all checked: a dict of outputs (the style of
many model libraries) was "not checked: no output requires grad", and an
LSTM's ``(out, (h, c))`` had h and c silently left out, so a wrong formula
reaching only them passed. The outputs are now the result's tensor leaves."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402


class Doubled(torch.autograd.Function):
    """The identity, whose backward doubles: wrong wherever it is applied."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class DictHead(torch.nn.Module):
    def __init__(self, wrong: bool):
        super().__init__()
        self.enc = torch.nn.Linear(4, 3)
        self.wrong = wrong

    def forward(self, x):
        h = torch.tanh(self.enc(x))
        return {"logits": 2 * h, "hidden": Doubled.apply(h) if self.wrong else h}


class CellOnly(torch.nn.Module):
    """An LSTM whose cell state alone goes through the wrong Function."""

    def __init__(self, wrong: bool):
        super().__init__()
        self.lstm = torch.nn.LSTM(3, 2)
        self.wrong = wrong

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return out, (h, Doubled.apply(c) if self.wrong else c)


def _x(*shape):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0),
                       requires_grad=True)


def test_a_dict_of_outputs_is_checked_and_a_wrong_one_fails():
    torch.manual_seed(0)
    right = check(DictHead(False).double(), (_x(3, 4),), seed=0)
    assert right.passed and {r.out_idx for r in right.results if r.check == "reverse"} == {0, 1}
    wrong = check(DictHead(True).double(), (_x(3, 4),), seed=0)
    assert not wrong.passed
    assert "2 times numerical" in wrong.message()


def test_an_lstms_state_is_checked_and_a_wrong_cell_formula_fails():
    torch.manual_seed(0)
    right = check(CellOnly(False).double(), (_x(4, 2, 3),), seed=0)
    assert right.passed
    assert {r.out_idx for r in right.results if r.check == "reverse"} == {0, 1, 2}
    torch.manual_seed(0)
    wrong = check(CellOnly(True).double(), (_x(4, 2, 3),), seed=0)
    failing = {r.out_idx for r in wrong.failures if r.check == "reverse"}
    assert failing == {2}     # the cell state, output 2, alone
