"""A fresh project for the plugin tests: a user's module of custom Functions and
an OpInfo plugin file, written into pytester's temporary folder.

The ``pytester`` fixture itself is enabled by ``pytest_plugins`` in the test
modules (pytest refuses ``pytest_plugins`` in a conftest below the rootdir).
"""
from __future__ import annotations

import pytest

#: a user's own derivative formulas: one right, one with a factor 2 too many
MYFUNCS = '''
import adcheck.refengine as E
from adcheck.refengine.autograd import Function


class GoodSin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return E.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * E.cos(x)


class DoubledSin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return E.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * E.cos(x)
'''

#: OpInfos of the project's ops: right, wrong, and wrong but declared a known failure
PROJ_OPINFOS = '''
import adcheck.refengine as E
from adcheck.opinfo import KnownFailure, OpInfo
from adcheck.opinfo.samples import unary

from myfuncs import DoubledSin, GoodSin

_COMMON = dict(family="proj", dtypes=(E.float64,), sample_func=unary(shapes=((3,),)),
               supports_forward_ad=False, supports_gradgrad=False,
               supports_fwgrad_bwgrad=False)

OPINFOS = [
    OpInfo("proj_good_sin", GoodSin.apply, **_COMMON),
    OpInfo("proj_doubled_sin", DoubledSin.apply, **_COMMON),
    OpInfo("proj_known_sin", DoubledSin.apply,
           known_failures=(KnownFailure("reverse", "tracked as issue 7 of the project"),),
           **_COMMON),
]
'''


@pytest.fixture
def project(pytester):
    """``pytester`` with ``myfuncs.py`` and ``proj_opinfos.py`` in its folder."""
    pytester.makepyfile(myfuncs=MYFUNCS, proj_opinfos=PROJ_OPINFOS)
    return pytester
