"""OpInfos for ``refengine/ops/special.py``: erfinv lgamma digamma polygamma."""
from __future__ import annotations

import mpmath

import adcheck.refengine as E

from .. import domains as D
from ..core import FLOATING, KnownFailure, OpInfo, SampleInput
from ..registry import register
from ..samples import make, unary
from .elementwise import mp_elementwise

FAMILY = "special"
#: the gamma family away from its poles at 0, -1, -2, ...
GAMMA = D.Domain(-2.8, 3.0, away_from=(0.0, -1.0, -2.0), margin=0.15, name="gamma")


def _poles(rule):
    def sample_func(opinfo, dtype):
        yield SampleInput(make((3,), values=(0.0, -1.0, -2.0)), name="poles", rule=rule)
    return sample_func


register(OpInfo("erfinv", E.erfinv, family=FAMILY, torch_name="erfinv",
                mpmath_ref=mp_elementwise(mpmath.erfinv), dtypes=FLOATING,
                sample_func=unary(D.Domain(-0.9, 0.9, name="erfinv"))))
register(OpInfo("lgamma", E.lgamma, family=FAMILY, torch_name="lgamma",
                mpmath_ref=mp_elementwise(lambda x: mpmath.log(abs(mpmath.gamma(x)))),
                dtypes=FLOATING, sample_func=unary(GAMMA)))
register(OpInfo("digamma", E.digamma, family=FAMILY, torch_name="digamma",
                mpmath_ref=mp_elementwise(mpmath.digamma), dtypes=FLOATING,
                sample_func=unary(GAMMA)))


def _polygamma_samples(opinfo, dtype):
    for n in (1, 2, 3):
        yield SampleInput(n, args=(make((2, 3), D.POSITIVE),), name=f"n={n}")
    yield SampleInput(1, args=(make((4,), GAMMA),), name="n=1, negative arguments")


_TORCH_POLYGAMMA = ("torch's polygamma(1, x) is accurate to about 1e-9 relative only; "
                    "refengine's values are mpmath's (checked against 30 digits)")
register(OpInfo("polygamma", E.polygamma, family=FAMILY, torch_name="polygamma",
                dtypes=FLOATING, sample_func=_polygamma_samples,
                known_failures=(KnownFailure("torch_values", _TORCH_POLYGAMMA,
                                             samples=("n=1", "n=1, negative arguments")),),
                description="polygamma(n, x): the sample's input is n (so no mpmath "
                            "reference: references take the tensor first)"))
