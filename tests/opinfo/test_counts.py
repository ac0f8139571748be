"""Issue 6's coverage targets: at least 200 OpInfos covering every op of
API.md, at least 100 with complex128 autograd and at least 60 with an mpmath
reference.

The op list is API.md's ("Operations", the linear algebra namespace and
``refengine.nn.functional``), copied here as data so that the test does not
read a file outside the repository: when API.md gains an op, add it here.
"""
from __future__ import annotations

from adcheck import opinfo
import adcheck.refengine as E

MIN_OPINFOS = 200
MIN_COMPLEX128_AUTOGRAD = 100
MIN_MPMATH_REFERENCE = 60

# API.md, "Operations": arithmetic and Python operators, elementwise, reductions.
ARITHMETIC = "add sub mul div neg pow reciprocal square abs sign".split()
ELEMENTWISE = """exp expm1 log log1p log2 log10 sqrt rsqrt sin cos tan asin acos atan sinh
    cosh tanh asinh acosh atanh sigmoid relu erf erfc erfinv lgamma digamma floor ceil round
    trunc frac clamp clip maximum minimum fmod remainder atan2 hypot xlogy lerp where
    nan_to_num angle sgn conj conj_physical resolve_conj resolve_neg real imag polar isnan
    isinf isfinite equal allclose""".split()
REDUCTIONS = """sum mean prod amax amin max min var std logsumexp cumsum cumprod
    norm""".split()
# API.md, "linear algebra": the top level and ``refengine.linalg``.
PRODUCTS = "matmul mm bmm mv dot vdot outer einsum".split()
LINALG = ["linalg." + n for n in """det slogdet inv solve cholesky qr eigh svd svdvals norm
    vector_norm matrix_norm pinv""".split()]
# API.md, "shape and views" (views, then the copying ops).
SHAPE = """view reshape view_as flatten unflatten squeeze unsqueeze transpose t permute
    expand expand_as select narrow unbind split chunk diagonal movedim view_as_real
    view_as_complex cat stack flip roll repeat tile gather scatter scatter_add index_select
    masked_fill masked_select tril triu""".split()
# API.md, "in-place": the ones with no out-of-place op of their own in the lists above.
IN_PLACE_ONLY = "zero_ fill_ copy_ index_add_".split()
# API.md, ``refengine.nn.functional``.
NN_FUNCTIONAL = ["nn.functional." + n for n in """relu gelu silu softplus elu leaky_relu
    hardtanh softmax log_softmax mse_loss cross_entropy nll_loss linear conv1d conv2d
    layer_norm dropout pad""".split()]

API_OPS = (ARITHMETIC + ELEMENTWISE + REDUCTIONS + PRODUCTS + LINALG + SHAPE + IN_PLACE_ONLY
           + NN_FUNCTIONAL + ["__getitem__", "__setitem__"])

#: API names whose OpInfo may carry another name (PyTorch's own op for an operator or an
#: in-place method); any one of the alternatives counts
ALIASES = {"__getitem__": ("getitem", "index"), "__setitem__": ("setitem", "index_put"),
           "zero_": ("zero", "zeros_like"), "fill_": ("fill",), "copy_": ("copy",),
           "index_add_": ("index_add",)}


def _covers(api_name: str, registered: set) -> bool:
    return api_name in registered or any(a in registered for a in ALIASES.get(api_name, ()))


def test_every_api_op_has_an_opinfo():
    registered = set(opinfo.names())
    missing = [name for name in API_OPS if not _covers(name, registered)]
    assert not missing, f"{len(missing)} ops of API.md have no OpInfo: {missing}"


def test_at_least_200_opinfos():
    assert len(opinfo.op_db) >= MIN_OPINFOS, f"{len(opinfo.op_db)} OpInfos"


def test_at_least_100_opinfos_with_complex128_autograd():
    complex_ = [i.name for i in opinfo.op_db if i.supports("reverse", E.complex128)]
    assert len(complex_) >= MIN_COMPLEX128_AUTOGRAD, f"{len(complex_)} with complex128 autograd"


def test_at_least_60_opinfos_with_an_mpmath_reference():
    with_ref = [i.name for i in opinfo.op_db if i.mpmath_ref is not None]
    assert len(with_ref) >= MIN_MPMATH_REFERENCE, f"{len(with_ref)} with an mpmath reference"


def test_the_api_list_has_no_duplicates():
    assert len(API_OPS) == len(set(API_OPS))
