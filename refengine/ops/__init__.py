"""refengine operations, one module per family; each op is defined once."""
from . import (binary, complex_ops, elementwise, indexing, products,  # noqa: F401
               reduction, shape)
from . import (arithmetic, conv, inplace_views, linalg, linalg_decompositions,  # noqa: F401
               multi_views, nn, norms, scans, special)
from .namespace import build

FUNCTIONS = build()
