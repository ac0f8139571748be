"""gradcheck's layout: line budgets, and imports that run one way.

STYLE.md's budgets (no module over 500 lines, no function over 60) and the
layering of gradcheck/__init__'s docstring: modules import each other
without cycles, counting imports inside functions too, so each layer can be
read knowing only the layers below it.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gradcheck"
SOURCES = sorted(PACKAGE.rglob("*.py")) + [ROOT / "refengine" / "pytree.py"]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return "adcheck." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules) -> set:
    """The gradcheck modules ``path`` imports, anywhere in its body
    (``from gradcheck import coords`` imports ``gradcheck.core.coords``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in modules and m != _module_name(path)}


def _graph() -> dict:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _imports(path, modules) for name, path in modules.items()}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_and_function_budgets(path):
    text = path.read_text()
    assert len(text.splitlines()) <= 500, f"{path.name} has more than 500 lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            assert length <= 60, f"{path.name}: {node.name} has {length} lines"


def test_gradcheck_imports_have_no_cycle():
    graph = _graph()
    state: dict = {}

    def visit(module, trail):
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                cycle = trail[trail.index(target):] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, trail + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


#: gradcheck's rooms, lowest first: each imports only from the rooms before it
ROOMS = ("engines", "core", "numerics", "lowprec", "verdict", "large")


def _room(module: str) -> int:
    """The rank of ``module``'s room; ``errors`` is below every room, and the
    modules directly in gradcheck (the plan: producers, flow, api) and the
    feature rooms above them rank last."""
    part = module.split(".")[2] if module.count(".") >= 2 else ""
    if part == "errors":
        return -1
    return ROOMS.index(part) if part in ROOMS else len(ROOMS)


def test_rooms_import_only_from_the_rooms_below():
    graph = _graph()
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                    if _room(m) < len(ROOMS) and _room(t) > _room(m))
    assert upward == [], "imports against the order of the rooms " + repr(ROOMS)


def test_the_room_order_check_sees_an_upward_import(monkeypatch):
    graph = _graph()
    graph["adcheck.gradcheck.core.jacobian"] |= {"adcheck.gradcheck.large.probed"}
    monkeypatch.setitem(globals(), "_graph", lambda: graph)
    with pytest.raises(AssertionError, match="core.jacobian -> adcheck.gradcheck.large.probed"):
        test_rooms_import_only_from_the_rooms_below()


def test_the_cycle_detector_sees_a_cycle(monkeypatch):
    # the test above must be able to fail: plant a cycle in the graph it reads
    graph = _graph()
    graph["adcheck.gradcheck.core.jacobian"] |= {"adcheck.gradcheck.api"}
    monkeypatch.setitem(globals(), "_graph", lambda: graph)
    with pytest.raises(pytest.fail.Exception, match="import cycle"):
        test_gradcheck_imports_have_no_cycle()
