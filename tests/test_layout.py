"""The budgets the code is held to, and refengine's import layers.

- No module outside ``tests/`` over 500 lines; no function anywhere over 60
  (``bench/`` and ``tests/`` included).
- refengine's module-level imports form no cycle, and the layers of the
  dispatcher import one way even counting the imports inside functions: the
  op data (``ops.registry``), the tangent storage (``autograd.tangents``),
  the dispatcher, the helpers that derive rules (``ops.opdef``), the public
  dual API (``autograd.forward_ad``) and vmap (``batching``), which fills a
  slot the dispatcher offers instead of being imported by it.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60

#: modules of refengine that import one way, function-level imports included
LAYERED = ("refengine.ops.registry", "refengine.autograd.tangents", "refengine.ops.dispatch",
           "refengine.ops.opdef", "refengine.autograd.forward_ad", "refengine.batching",
           "refengine.batching.batched", "refengine.batching.rules",
           "refengine.batching.runtime", "refengine.batching.api")


def _sources() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py")
                  if not any(part.startswith(".") or part in ("build", "dist")
                             for part in p.relative_to(ROOT).parts))


def test_no_module_over_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in _sources()
            if p.relative_to(ROOT).parts[0] != "tests"
            and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them): {long}"


def test_no_function_over_60_lines():
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them): {long}"


def _modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "refengine").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


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


def _imports(name: str, path: Path, modules: dict, nested: bool) -> set[str]:
    """The refengine modules ``name`` imports (see ``_import_nodes``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8")), nested):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
            continue
        base = package[:len(package) - node.level + 1] if node.level else []
        target = ".".join(base + (node.module.split(".") if node.module else []))
        for alias in node.names:
            sub = f"{target}.{alias.name}"
            found.add(sub if sub in modules else target)
    return {m for m in found if m in modules and m != name}


def _cycle(graph: dict) -> list | None:
    """One cycle of ``graph`` (name -> names it imports), or None."""
    state, stack = {}, []

    def walk(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        state[node] = "done"
        stack.pop()
        return None
    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


def test_refengine_module_level_imports_have_no_cycle():
    modules = _modules()
    graph = {n: _imports(n, p, modules, nested=False) for n, p in modules.items()}
    cycle = _cycle(graph)
    assert cycle is None, f"module-level import cycle: {' -> '.join(cycle)}"


def test_dispatcher_layers_import_one_way():
    modules = _modules()
    assert set(LAYERED) <= set(modules)
    graph = {n: _imports(n, modules[n], modules, nested=True) & set(LAYERED) for n in LAYERED}
    cycle = _cycle(graph)
    assert cycle is None, (f"import cycle among the dispatcher's layers (an import inside a "
                           f"function counts): {' -> '.join(cycle)}")
    assert not graph["refengine.ops.dispatch"] - {"refengine.ops.registry",
                                                   "refengine.autograd.tangents"}
    assert not graph["refengine.ops.registry"]


def test_the_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a"}}) is None
