"""One sample of PyTorch's op_db and adcheck's precise check of it, as the
sweep (``adcheck ops --registry torch``) runs it: for the tests that pin a
sweep's verdict on the op that showed it. Imported after the tests'
``importorskip`` of torch and expecttest."""
import torch

from adcheck import gradcheck
from adcheck.opinfo import torchdb


def case(op: str, dtype: str, index: int) -> tuple:
    """``(entry, torch dtype, sample, call)`` of sample ``index`` of ``op`` in ``dtype``."""
    entry = torchdb.get(op)
    dtype = getattr(torch, dtype)
    sample = entry.sample(index, dtype)
    return entry, dtype, sample, entry.call(sample)


def checked(op: str, dtype: str, index: int, check: str):
    """The report of the sweep's precise ``check`` ("reverse", "forward",
    "gradgrad", ...) of that sample."""
    entry, dtype, _, call = case(op, dtype, index)
    options = entry.adcheck_options(check, dtype, precise=True)
    return gradcheck.check(call.func, call.inputs, name=op, seed=0, **options)
