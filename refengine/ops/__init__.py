"""refengine operations, one module per family; each op is defined once."""
from . import (binary, complex_ops, elementwise, indexing, products,  # noqa: F401
               reduction, shape)
from . import linalg, linalg_decompositions, norms  # noqa: F401
from .namespace import build

FUNCTIONS = build()
