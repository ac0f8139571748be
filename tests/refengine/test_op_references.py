"""Each OpInfo's NumPy and mpmath references agree with the op's values, so the
references that gradcheck's precise mode relies on are themselves checked."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from adcheck import opinfo
import adcheck.refengine as E


def _cases(attr):
    out = []
    for info in opinfo.op_db:
        if getattr(info, attr) is None:
            continue
        for dtype in (E.float64, E.complex128):
            if dtype in info.dtypes:
                out.append(pytest.param(info, dtype, id=f"{info.name}-{dtype.name}"))
    return out


def _outputs(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _to_mp(a: np.ndarray) -> np.ndarray:
    out = np.empty(a.shape, dtype=object)
    for idx, v in np.ndenumerate(a):
        out[idx] = mpmath.mpc(v.real, v.imag) if np.iscomplexobj(a) else mpmath.mpf(float(v))
    return out


def _from_mp(a, like: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=object)
    out = np.empty(a.shape, dtype=like.dtype)
    for idx, v in np.ndenumerate(a):
        out[idx] = complex(v) if np.iscomplexobj(out) else float(mpmath.re(v))
    return out


@pytest.mark.parametrize("info, dtype", _cases("ref"))
def test_numpy_reference_matches_values(info, dtype):
    for sample in list(info.sample_inputs(dtype)) + list(info.special_inputs(dtype)):
        inp, args, kwargs = sample.numpy()
        expected = _outputs(info.ref(inp, *args, **kwargs))
        actual = _outputs(info(sample))
        assert len(actual) == len(expected), f"{info.name}: {len(actual)} outputs, " \
            f"the reference has {len(expected)}"
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a.numpy(), np.asarray(e), rtol=1e-10, atol=1e-12,
                                       err_msg=f"{info.name} {dtype.name} {sample!r}")


@pytest.mark.parametrize("info, dtype", _cases("mpmath_ref"))
def test_mpmath_reference_matches_values(info, dtype):
    for sample in list(info.sample_inputs(dtype))[:3]:
        inp, args, kwargs = sample.numpy()
        inp = [_to_mp(x) for x in inp] if isinstance(inp, list) else _to_mp(inp)
        args = tuple(_to_mp(a) if isinstance(a, np.ndarray) and a.dtype.kind in "fc" else a
                     for a in args)
        with mpmath.workdps(30):
            expected = _outputs(info.mpmath_ref(inp, *args, **kwargs))
        for a, e in zip(_outputs(info(sample)), expected):
            a = a.numpy()
            np.testing.assert_allclose(a, _from_mp(e, a), rtol=1e-12, atol=1e-14,
                                       err_msg=f"{info.name} {dtype.name} {sample!r}")
