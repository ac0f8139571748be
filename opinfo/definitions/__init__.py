"""OpInfo definitions, one module per refengine op family (``refengine/ops/``).

Every module in this package is imported (and so registers its OpInfos)
when ``opinfo`` is imported; adding a family means adding a module here.
"""
import importlib
import pkgutil


def load_all() -> list:
    """Import every definitions module, in name order, then derive the in-place
    variants (``opinfo.variants``) of the ops that have one; returns the module names."""
    loaded = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
            loaded.append(info.name)
    _register_inplace_variants()
    from ..registry import seal_builtin
    seal_builtin()
    return loaded


def _register_inplace_variants() -> None:
    from ..registry import names, op_db, register
    from ..variants import derivable, inplace_variant
    registered = set(names())
    for base in list(op_db):
        if derivable(base, registered):
            register(inplace_variant(base))
