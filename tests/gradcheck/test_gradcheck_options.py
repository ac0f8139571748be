"""Options: one validated, frozen set of keywords; PyTorch's flags translated once.

The defaults are PyTorch's (read from torch's signatures where torch is
installed, else the values its documentation gives); bad values are
refused in check()'s own terms (see also test_gradcheck_inputs).
"""
from __future__ import annotations

import dataclasses
import inspect
import json

import numpy as np
import pytest

from adcheck import gradcheck
from adcheck.gradcheck import Options, check, gradgradcheck

DOCUMENTED = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3, "nondet_tol": 0.0,
              "check_undefined_grad": True, "check_grad_dtypes": False,
              "check_batched_grad": False, "check_batched_forward_grad": False,
              "check_forward_ad": False, "check_backward_ad": True, "fast_mode": False}


def test_defaults_are_pytorchs():
    options = Options()
    for name, value in DOCUMENTED.items():
        assert getattr(options, name) == value, name
    try:
        import torch
    except ImportError:
        return
    for name, param in inspect.signature(torch.autograd.gradcheck).parameters.items():
        if name in DOCUMENTED:
            assert param.default == getattr(options, name), name


def test_options_are_frozen_and_settings_are_json():
    options = Options.from_keywords(precise=True, seed=3, reference=np.sin)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.eps = 1.0
    settings = options.settings()
    assert "reference" not in settings and settings["precise"] is True
    json.dumps(settings)


def test_fast_mode_applies_only_without_precise_or_reference():
    assert Options(fast_mode=True).fast
    assert not Options(fast_mode=True, precise=True).fast
    assert not Options(fast_mode=True, reference=np.sin).fast


def test_gradgradcheck_translates_its_flags_once(E, monkeypatch):
    seen = []
    monkeypatch.setattr(gradcheck.api, "run",
                        lambda func, inputs, options: seen.append(options) or _passing())
    x = E.from_numpy(np.array([0.5])).requires_grad_()
    assert gradgradcheck(E.sin, (x,), check_fwd_over_rev=True, check_rev_over_rev=False,
                         gen_non_contig_grad_outputs=True, seed=1)
    options = seen[0]
    assert (options.order, options.check_forward_ad, options.check_backward_ad) == (2, True, False)
    assert options.seed == 1 and options.grad_outputs is None


def _passing():
    return gradcheck.Report("f", "refengine")


def test_check_records_its_settings(E):
    x = E.from_numpy(np.array([0.5, 0.25])).requires_grad_()
    report = check(E.sin, (x,), order=2, seed=4, name="mine")
    assert report.settings["order"] == 2 and report.settings["name"] == "mine"
    assert report.name == "mine" and report.seed == 4
