"""Shrinking a program that shows a difference, and writing it as a reproducer.

The shrinker drops statements (with everything that reads what they define)
while the same kind of difference, at the same kind of statement, remains;
then it drops grad modes. What is left is usually two to five lines, written
out as a standalone script that runs the program on both engines and prints
what each one observed.
"""
from __future__ import annotations

from dataclasses import replace

from fuzz_compare import first_difference
from fuzz_engine import observe


def difference(program, engines):
    """The first difference of ``program`` between the two engine modules."""
    ref, tor = engines
    return first_difference(observe(program, ref), observe(program, tor))


def shrink(program, engines, key=None, budget: int = 400):
    """The smallest program found that still shows a difference with ``key``
    (the original's key when None); returns (program, difference)."""
    found = difference(program, engines)
    if found is None:
        return program, None
    key = key or found.key
    tries = 0

    def keeps(candidate):
        nonlocal tries
        tries += 1
        d = difference(candidate, engines)
        return d if d is not None and d.key == key else None

    progress = True
    while progress and tries < budget:
        progress = False
        for i in range(len(program.stmts) - 1, -1, -1):
            if i >= len(program.stmts) or tries >= budget:
                continue
            candidate = program.without([i])
            d = keeps(candidate)
            if d is not None:
                program, found, progress = candidate, d, True
        for i, stmt in enumerate(program.stmts):
            if stmt.grad_mode is not None and tries < budget:
                stmts = list(program.stmts)
                stmts[i] = replace(stmt, grad_mode=None)
                candidate = replace(program, stmts=tuple(stmts))
                d = keeps(candidate)
                if d is not None:
                    program, found, progress = candidate, d, True
    return program, found


_TEMPLATE = '''"""Differential fuzzer finding: {kind} at {stmt!r} ({label}).

refengine: {ref}
torch:     {tor}

Run: python {name}
"""
import warnings

import numpy as np
import torch

import adcheck.refengine as refengine

LOG = []


def hook(k, factor):
    def h(g):
        LOG.append((k, g.detach().resolve_conj().numpy(force=True).tolist()
                    if hasattr(g, "resolve_conj") else g.detach().numpy().tolist()))
        return None if factor is None else g * factor
    return h


def program(E):
{body}
    return {{k: v for k, v in locals().items() if k.startswith("v")}}


def show(E):
    LOG.clear()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            names = program(E)
    except Exception as error:  # noqa: BLE001 - the error is what is shown
        print(f"  raises {{type(error).__name__}}: {{error}}")
        return
    for name, value in names.items():
        try:
            print(f"  {{name}} = {{value!r}}")
            grad = getattr(value, "grad", None) if hasattr(value, "is_leaf") else None
            if grad is not None:
                print(f"  {{name}}.grad = {{grad!r}}")
        except Exception as error:
            print(f"  {{name}}: reading it raises {{type(error).__name__}}: {{error}}")
    if LOG:
        print(f"  hook calls: {{LOG}}")


for engine in (refengine, torch):
    print(engine.__name__)
    show(engine)
'''


def reproducer(program, found, name: str = "reproducer.py") -> str:
    """A standalone script running ``program`` on refengine and torch."""
    lines = program.source().splitlines()
    if program.mode == "forward":
        body = ["with E.autograd.forward_ad.dual_level():"] + ["    " + x for x in lines]
        body += ["    print('  tangents:', {k: E.autograd.forward_ad.unpack_dual(v).tangent "
                 "for k, v in locals().items() if k.startswith('v') and hasattr(v, 'dim')})"]
    else:
        body = lines
    return _TEMPLATE.format(kind=found.kind, stmt=found.stmt, label=found.label,
                            ref=found.refengine[:300].replace('"""', "'''"),
                            tor=found.torch[:300].replace('"""', "'''"), name=name,
                            body="\n".join("    " + x for x in body))
