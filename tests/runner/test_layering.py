"""The layers import downwards only: nothing outside ``cli`` imports ``cli``.

``cli`` parses, calls the runner and renders; the runner, the pytest plugin,
the library packages and the benchmarks must work without it. The test reads
every module's import statements (``ast``), so an import inside a function
counts too, and fails naming each file and line that reaches into ``cli``.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the folders whose code must not import cli (every package but cli, and bench)
LAYERS = ("refengine", "gradcheck", "opinfo", "conformance", "runner", "pytest_adcheck",
          "bench")


def _imports(path: Path) -> list:
    """``[(line, module)]`` for every absolute import in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _reaches_cli(module: str) -> bool:
    return module == "cli" or module.startswith("cli.")


def test_the_scan_sees_an_import_of_cli(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\n\ndef f():\n    from cli.formats import get_format\n")
    assert [m for _, m in _imports(sample) if _reaches_cli(m)] == ["cli.formats"]


def test_nothing_outside_cli_imports_cli():
    offenders = [f"{path.relative_to(REPO)}:{line} imports {module}"
                 for layer in LAYERS for path in sorted((REPO / layer).rglob("*.py"))
                 for line, module in _imports(path) if _reaches_cli(module)]
    assert not offenders, "\n".join(offenders)


def test_every_layer_exists():
    # a renamed package would make the scan above pass vacuously
    assert all((REPO / layer).is_dir() for layer in LAYERS)
