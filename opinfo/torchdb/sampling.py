"""An OpInfo's samples, drawn so that any one of them rebuilds identically alone.

PyTorch's sample functions draw their tensors from the global RNGs (torch,
NumPy and Python's ``random``). Before each sample is produced, those RNGs
are seeded from a stable hash of (op name, dtype, sample index), and their
previous states are put back afterwards: sample ``i`` then depends only on
its own seed and on the sample function's code, so ``sample(i)`` in another
process, or after other samples, gives the same tensors.

As PyTorch's gradient tests do (``include_conjugated_inputs``), complex
dtypes also get each sample again with its input (or its first input
tensor) conjugated, appended after the originals, for ops whose
``test_conjugated_samples`` is set.
"""
from __future__ import annotations

import hashlib
import random
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from adcheck.refengine.pytree import tree_leaves

#: the device the samples are made on
DEVICE = "cpu"


def sample_seed(name: str, dtype, index) -> int:
    """The 32-bit seed of sample ``index`` of op ``name`` in ``dtype``."""
    text = f"{name}:{str(dtype).rsplit('.', 1)[-1]}:{index}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


@contextmanager
def seeded(seed: int):
    """torch's, NumPy's and Python's global RNGs seeded with ``seed``; their
    states are restored on exit, so the caller's streams are left alone."""
    import torch
    saved = (torch.random.get_rng_state(), np.random.get_state(), random.getstate())
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    try:
        yield
    finally:
        torch.random.set_rng_state(saved[0])
        np.random.set_state(saved[1])
        random.setstate(saved[2])


@dataclass
class TorchSample:
    """One of op_db's ``SampleInput``s with where it came from.

    ``sample`` is PyTorch's ``SampleInput`` itself; ``index`` its position in
    the op's sample list for that dtype (conjugated copies come after the
    originals); ``seed`` what the RNGs were seeded with; ``conjugated`` whether
    this is the conjugated copy of original sample ``index - originals``.
    """

    sample: object
    index: int
    seed: int
    conjugated: bool = False

    @property
    def input(self):
        return self.sample.input

    @property
    def args(self):
        return self.sample.args

    @property
    def kwargs(self):
        return self.sample.kwargs

    @property
    def output_process_fn_grad(self):
        return self.sample.output_process_fn_grad

    def tensors(self) -> list:
        """Every tensor of the sample (input, args, kwargs), in that order."""
        import torch
        return [leaf for leaf in tree_leaves((self.input, self.args, self.kwargs))
                if isinstance(leaf, torch.Tensor)]

    @property
    def broadcasts_input(self) -> bool:
        return bool(self.sample.broadcasts_input)

    @property
    def name(self) -> str:
        """op_db's name for the sample, else a summary of its arguments."""
        own = self.sample.name or ""
        prefix = "conjugated " if self.conjugated else ""
        if own:
            return prefix + own
        summary = self.sample.summary()
        summary = summary.removeprefix("SampleInput(").removesuffix(")")
        summary = summary.replace("dtype=torch.", "")
        for noise in (', device="cpu"', "torch.", ", broadcasts_input=False", ", name=''",
                      ", args=()", ", kwargs={}"):
            summary = summary.replace(noise, "")
        return prefix + (summary if len(summary) <= 160 else summary[:157] + "...")

    def __repr__(self) -> str:
        return f"TorchSample#{self.index}({self.name!r}, seed={self.seed})"


def _conjugate(sample):
    """``sample`` with its input (or its first input tensor) conjugated, as
    PyTorch's ``conjugate_sample_inputs`` does (the conjugate is a view that
    keeps ``requires_grad``)."""
    def conj(tensor):
        return tensor.conj().requires_grad_(tensor.requires_grad)
    import torch
    if isinstance(sample.input, torch.Tensor):
        sample.input = conj(sample.input)
    else:
        sample.input[0] = conj(sample.input[0])
    return sample


def _pass(op, name: str, dtype, requires_grad: bool, conjugated: bool, kwargs: dict,
          offset: int):
    """One pass through the sample function, each sample drawn under its own seed."""
    with seeded(sample_seed(name, dtype, "call")):
        produced = iter(op.sample_inputs_func(op, DEVICE, dtype, requires_grad, **kwargs))
    index = 0
    while True:
        seed = sample_seed(name, dtype, index)
        with seeded(seed):
            try:
                sample = next(produced)
            except StopIteration:
                return
            if conjugated:
                sample = _conjugate(sample)
        yield TorchSample(sample, offset + index, seed, conjugated)
        index += 1


def iter_samples(op, name: str, dtype, requires_grad: bool = True):
    """Every sample of ``op`` for ``dtype``, as PyTorch's gradient tests list them."""
    with_conj = bool(op.test_conjugated_samples and dtype.is_complex)
    # the keywords torch's _check_helper hands the sample function
    kwargs = {"include_conjugated_inputs": with_conj, "small_inputs_only": _small_only()}
    count = 0
    for sample in _pass(op, name, dtype, requires_grad, False, kwargs, 0):
        count += 1
        yield sample
    if with_conj:
        yield from _pass(op, name, dtype, requires_grad, True, kwargs, count)


def _small_only() -> bool:
    """torch asks for small inputs only in its slow-gradcheck job."""
    from torch.testing._internal.common_utils import TEST_WITH_SLOW_GRADCHECK
    return bool(TEST_WITH_SLOW_GRADCHECK)
