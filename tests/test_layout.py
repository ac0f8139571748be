"""The layout the code is held to, stated once (docs/architecture.md explains it).

- The packages import in one direction, lowest first: ``PACKAGES``. An import
  inside a function counts; ``bench/``, ``examples/`` and ``tests/`` may
  import anything.
- gradcheck's rooms import in one direction too, lowest first: ``ROOMS``; its
  ``errors`` module is below every room, and the plan (``producers``, ``flow``,
  ``api``) and the feature rooms sit above them.
- No import loop between modules, counting imports inside functions, except
  the ones named in ``KNOWN_LOOPS`` with their reason.
- refengine's dispatcher layers import one way (``LAYERED``).
- No module outside ``tests/`` over 500 lines; no function anywhere over 60
  (``bench/`` and ``tests/`` included).

Each rule has a test that plants a violation and sees it caught.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60

#: adcheck's packages, lowest first: each imports only from those before it
PACKAGES = ("refengine", "gradcheck", "opinfo", "conformance", "runner", "pytest_adcheck",
            "cli")

#: gradcheck's rooms, lowest first; modules directly in gradcheck/ and the
#: rooms not listed (new features) rank above them all
ROOMS = ("errors", "engines", "core", "numerics", "lowprec", "verdict", "large")

#: import loops that remain, each a set of modules any loop must stay within, and why
KNOWN_LOOPS = {
    "refengine's core": (
        ("refengine.tensor", "refengine.creation", "refengine.ops.dispatch",
         "refengine.ops.opdef", "refengine.autograd.", "refengine.batching."),
        "a Tensor's methods dispatch ops, ops make Tensors with graph nodes, and the nodes' "
        "backward and vmap's rules call ops again: the recursion is the engine's nature; "
        "the loop is closed only by imports inside functions (the module-level imports "
        "have none, test_module_level_imports_of_refengine_have_no_loop)"),
    "refengine's linear algebra": (
        ("refengine.ops.linalg", "refengine.ops.linalg_decompositions"),
        "the decompositions' vjps solve with linalg's ops, and linalg's ops call the "
        "decompositions; imported inside functions"),
}

#: modules of refengine that import one way, function-level imports included
LAYERED = ("refengine.ops.registry", "refengine.autograd.tangents", "refengine.ops.dispatch",
           "refengine.ops.opdef", "refengine.autograd.forward_ad", "refengine.batching",
           "refengine.batching.batched", "refengine.batching.rules",
           "refengine.batching.runtime", "refengine.batching.api")


def _sources() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py")
                  if not any(part.startswith(".") or part in ("build", "dist")
                             for part in p.relative_to(ROOT).parts))


def _name(path: Path) -> str:
    """``refengine.ops.dispatch`` for refengine/ops/dispatch.py (the name
    under ``adcheck.``; the plugin's own name for pytest_adcheck)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def _import_nodes(tree: ast.Module, nested: bool) -> list:
    """The import statements of a module: at module level (also inside a
    top-level ``if`` or ``try``), and with ``nested`` those in functions too."""
    if nested:
        return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                   ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _imports(name: str, path: Path, modules: dict, nested: bool = True) -> set[str]:
    """The adcheck modules ``name`` imports: absolute (``adcheck.X``) and relative."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8")), nested):
        if isinstance(node, ast.Import):
            found.update(a.name.removeprefix("adcheck.") for a in node.names)
            continue
        if node.level:
            target = ".".join(package[:len(package) - node.level + 1]
                              + (node.module.split(".") if node.module else []))
        else:
            target = (node.module or "").removeprefix("adcheck").lstrip(".")
        for alias in node.names:
            sub = f"{target}.{alias.name}" if target else alias.name
            found.add(sub if sub in modules else target)
    resolved = set()
    for module in found:
        while module and module not in modules:     # adcheck.x.y.name -> adcheck.x.y
            module = module.rpartition(".")[0]
        if module and module != name:
            resolved.add(module)
    return resolved


def _graph(nested: bool = True) -> dict[str, set[str]]:
    modules = _modules()
    return {n: _imports(n, p, modules, nested) for n, p in modules.items()}


def _loops(graph: dict) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _package_rank(module: str) -> int:
    return PACKAGES.index(module.split(".")[0])


def _room_rank(module: str) -> int:
    parts = module.split(".")
    if parts[0] != "gradcheck" or len(parts) < 2 or parts[1] not in ROOMS:
        return len(ROOMS)
    return ROOMS.index(parts[1])


def _upward(graph: dict) -> list[str]:
    """Imports from a package into a later one, or from a gradcheck room into a later one."""
    bad = []
    for module, targets in graph.items():
        for target in targets:
            if _package_rank(target) > _package_rank(module):
                bad.append(f"{module} -> {target} (package order {PACKAGES})")
            elif (module.startswith("gradcheck.") and target.startswith("gradcheck.")
                  and _room_rank(module) < len(ROOMS) and _room_rank(target) > _room_rank(module)):
                bad.append(f"{module} -> {target} (room order {ROOMS})")
    return sorted(bad)


def _unnamed_loops(graph: dict) -> list[list[str]]:
    def within(loop, prefixes):
        return all(any(m == p or (p.endswith(".") and m.startswith(p)) for p in prefixes)
                   for m in loop)
    return [loop for loop in _loops(graph)
            if not any(within(loop, prefixes) for prefixes, _ in KNOWN_LOOPS.values())]


def test_every_package_and_room_exists():
    # a renamed package or room would make the order checks pass vacuously
    assert all((ROOT / package).is_dir() for package in PACKAGES)
    assert all((ROOT / "gradcheck" / room).is_dir() or (ROOT / "gradcheck" / f"{room}.py").is_file()
               for room in ROOMS)


def test_packages_and_rooms_import_downwards_only():
    assert _upward(_graph()) == []


def test_the_order_check_sees_an_upward_import():
    graph = _graph()
    graph["gradcheck.core.jacobian"] = graph["gradcheck.core.jacobian"] | {"gradcheck.large.probed"}
    graph["runner.spec"] = graph["runner.spec"] | {"cli.errors"}
    assert _upward(graph) == [
        f"gradcheck.core.jacobian -> gradcheck.large.probed (room order {ROOMS})",
        f"runner.spec -> cli.errors (package order {PACKAGES})"]


def test_no_import_loop_but_the_named_ones():
    assert _unnamed_loops(_graph()) == []


def test_the_loop_finder_sees_a_new_loop():
    graph = _graph()
    graph["opinfo.samples"] = graph["opinfo.samples"] | {"opinfo.core"}
    assert ["opinfo.core", "opinfo.samples"] in _unnamed_loops(graph)
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_module_level_imports_of_refengine_have_no_loop():
    graph = {n: t for n, t in _graph(nested=False).items() if n.startswith("refengine")}
    assert _loops(graph) == []


def test_dispatcher_layers_import_one_way():
    graph = _graph()
    assert set(LAYERED) <= set(graph)
    layered = {n: graph[n] & set(LAYERED) for n in LAYERED}
    assert _loops(layered) == [], "a loop among the dispatcher's layers"
    assert not layered["refengine.ops.dispatch"] - {"refengine.ops.registry",
                                                     "refengine.autograd.tangents"}
    assert not layered["refengine.ops.registry"]


def test_no_module_over_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in _sources()
            if p.relative_to(ROOT).parts[0] != "tests"
            and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them): {long}"


def _long_functions(path: Path, root: Path = ROOT) -> list[str]:
    long = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines})")
    return long


def test_no_function_over_60_lines():
    long = [entry for path in _sources() for entry in _long_functions(path)]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them): {long}"


def test_the_function_budget_sees_a_long_function(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES)
    assert _long_functions(sample, tmp_path) == [f"sample.py:1 f ({MAX_FUNCTION_LINES + 1})"]


@pytest.mark.parametrize("text, expected", [
    ("from adcheck.gradcheck.core import coords\n", {"gradcheck.core.coords"}),
    ("def f():\n    from adcheck.cli.formats import get_format\n", {"cli.formats"}),
    ("import adcheck.runner.tasks\n", {"runner.tasks"}),
    ("from adcheck import opinfo\n", {"opinfo"}),
])
def test_the_scan_reads_every_form_of_import(tmp_path, text, expected):
    path = tmp_path / "sample.py"
    path.write_text(text)
    assert _imports("bench.sample", path, _modules()) == expected
