"""Discover the conformance areas and run their cases on an engine.

An area is any module of this package other than the infrastructure
(``case``, ``compare``, ``runner``); its cases register themselves with
``@case`` when it is imported, so adding an area is adding a file.

    >>> from adcheck.conformance import run_suite
    >>> results = run_suite("refengine", areas=["inplace"])
    >>> [r.status for r in results]          # doctest: +SKIP
    ['passed', 'passed', ...]
"""
from __future__ import annotations

import importlib
import pkgutil
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from adcheck.conformance.case import CASES, ENGINES, Case

_INFRASTRUCTURE = frozenset({"case", "compare", "runner", "__init__", "__main__"})

STATUSES = ("passed", "failed", "error", "not-applicable")


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case on one engine.

    ``status`` is ``"passed"``, ``"failed"`` (an assertion did not hold),
    ``"error"`` (the case raised something else, such as a missing
    attribute) or ``"not-applicable"`` (the case declares it cannot run on
    this engine; ``message`` says why).
    """

    case: Case
    engine: str
    status: str
    message: str
    seconds: float

    @property
    def id(self) -> str:
        return self.case.id


def areas() -> list[str]:
    """The names of every conformance area, sorted."""
    return sorted(info.name for info in pkgutil.iter_modules([str(Path(__file__).parent)])
                  if info.name not in _INFRASTRUCTURE and not info.name.startswith("_"))


def load_cases(selected: list[str] | None = None) -> list[Case]:
    """Import the selected areas (all by default) and return their cases.

    Raises ``ValueError`` naming the known areas when one is unknown.
    """
    known = areas()
    chosen = known if selected is None else list(selected)
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise ValueError(f"unknown conformance area(s) {', '.join(map(repr, unknown))}; "
                         f"known areas: {', '.join(known)}")
    for name in chosen:
        importlib.import_module(f"adcheck.conformance.{name}")
    return [c for c in CASES if c.area in chosen]


def resolve_engine(engine: str | ModuleType) -> tuple[ModuleType, str]:
    """The engine module and its name, from a module or "refengine"/"torch"."""
    if isinstance(engine, ModuleType):
        name = engine.__name__
        return engine, "refengine" if name == "adcheck.refengine" else name.split(".", 1)[0]
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; known engines: {', '.join(ENGINES)}")
    return importlib.import_module("adcheck.refengine" if engine == "refengine" else engine), engine


def run_case(case: Case, engine: str | ModuleType) -> CaseResult:
    """Run one case on one engine and classify the outcome."""
    module, name = resolve_engine(engine)
    if not case.runs_on(name):
        return CaseResult(case, name, "not-applicable", case.reason_not_on(name) or "", 0.0)
    import pytest  # pytest.raises/fail signal failure with their own exception
    start = time.perf_counter()
    try:
        case.func(module)
    except (AssertionError, pytest.fail.Exception) as exc:
        status, message = "failed", _describe(exc)
    except Exception as exc:  # noqa: BLE001 - a case may break in any way
        status, message = "error", _describe(exc)
    else:
        status, message = "passed", ""
    return CaseResult(case, name, status, message, time.perf_counter() - start)


def run_suite(engine: str | ModuleType, areas: list[str] | None = None) -> list[CaseResult]:
    """Run every case of the given areas (all by default) on ``engine``.

    ``engine`` is an engine module or one of the names ``"refengine"`` and
    ``"torch"``. Returns one ``CaseResult`` per case, in definition order.
    """
    cases = load_cases(areas)
    module, _ = resolve_engine(engine)
    return [run_case(c, module) for c in cases]


def _describe(exc: BaseException) -> str:
    """One line: the exception, its text, and the line of the case it came from."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "/conformance/" in f.filename and not f.filename.endswith("runner.py")]
    text = str(exc).strip()
    if not text and frames:
        text = (frames[-1].line or "").strip()   # a bare assert: show the statement
    first = " ".join(text.split())
    first = first if len(first) <= 300 else first[:297] + "..."
    location = f" (at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {first}{location}"
