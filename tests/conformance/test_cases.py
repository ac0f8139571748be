"""Every conformance case on refengine and on torch, and the runner itself."""
from __future__ import annotations

import importlib
import importlib.util
import re
import time
from pathlib import Path

import pytest

from adcheck.conformance.case import ENGINES, SEEDS as SEED_SOURCES, TORCH_BEHAVIOUR
from adcheck.conformance.runner import CaseResult, areas, load_cases, run_case, run_suite

ALL_CASES = load_cases()
SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"


def _engine(name: str):
    if name == "torch" and importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    return importlib.import_module("adcheck.refengine" if name == "refengine" else name)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_case(case, engine):
    if not case.runs_on(engine):
        pytest.skip(case.reason_not_on(engine))
    case.func(_engine(engine))


def test_areas_are_discovered():
    names = areas()
    assert {"inplace", "views", "hooks", "graph"} <= set(names)
    assert not {"case", "compare", "runner"} & set(names)
    assert {c.area for c in ALL_CASES} <= set(names)


def test_every_case_cites_a_seed_sentence():
    """A seed's sentence, or (source TORCH_BEHAVIOUR) the torch behaviour observed."""
    for c in ALL_CASES:
        assert len(c.cite.split()) >= 4, c.id
        assert c.source in SEED_SOURCES or c.source == TORCH_BEHAVIOUR, c.id


def _words(text: str) -> str:
    text = re.sub(r":\w+:", " ", text)          # reST roles such as :math:
    return " ".join(re.sub(r"[^a-z0-9_]+", " ", text.lower()).split())


def test_every_cite_quotes_its_seed():
    """A cite shares a run of five words with the seed it names (math aside)."""
    if not SEEDS.is_dir():
        pytest.skip(f"the seed documents are not at {SEEDS}")
    seeds = {}
    for c in ALL_CASES:
        if c.source == TORCH_BEHAVIOUR:
            continue    # describes torch, checked by running the case on torch
        if c.source not in seeds:
            seeds[c.source] = _words((SEEDS / c.source).read_text(encoding="utf-8"))
        words = _words(c.cite).split()
        runs = {" ".join(words[i:i + 5]) for i in range(max(1, len(words) - 4))}
        assert any(run in seeds[c.source] for run in runs), f"{c.id}: {c.cite!r}"


def test_unknown_area_names_the_known_ones():
    with pytest.raises(ValueError, match="known areas: .*inplace"):
        run_suite("torch", areas=["no_such_area"])


def test_run_suite_reports_per_case_results():
    torch = _engine("torch")
    start = time.perf_counter()
    results = run_suite(torch, areas=["graph"])
    elapsed = time.perf_counter() - start
    assert results and all(isinstance(r, CaseResult) for r in results)
    assert {r.case.area for r in results} == {"graph"}
    assert all(r.status == "passed" and r.engine == "torch" for r in results), \
        [(r.id, r.message) for r in results if r.status != "passed"]
    # each case's time is measured around that case: together within the whole run's
    assert all(r.seconds > 0 for r in results)
    assert sum(r.seconds for r in results) <= elapsed


def test_run_case_classifies_failures_and_errors():
    torch = _engine("torch")
    template = ALL_CASES[0]

    def fails(E):
        assert E.ones(1).item() == 2.0, "one is not two"

    def breaks(E):
        E.no_such_function()

    from dataclasses import replace
    failed = run_case(replace(template, func=fails), torch)
    errored = run_case(replace(template, func=breaks), torch)
    skipped = run_case(replace(template, not_on=(("torch", "not here"),)), torch)
    assert (failed.status, errored.status, skipped.status) == ("failed", "error", "not-applicable")
    assert "one is not two" in failed.message
    assert "no_such_function" in errored.message
    assert skipped.message == "not here"
