"""Documented autograd semantics as cases that run on refengine and on torch.

``run_suite(engine, areas=None)`` runs them and returns one ``CaseResult``
per case; ``areas()`` lists the areas; ``CASES`` holds the cases of the
areas imported so far. Engines are imported only when a suite runs.
"""
if not __name__.startswith("adcheck."):     # the checkout's folder, imported by its short name
    raise ImportError(f"import adcheck.{__name__}, not {__name__}: adcheck's packages live "
                      "under the name 'adcheck' (see the README)")
from adcheck.conformance.case import CASES, Case, case
from adcheck.conformance.runner import CaseResult, areas, load_cases, run_case, run_suite

__all__ = ["CASES", "Case", "CaseResult", "areas", "case", "load_cases", "run_case",
           "run_suite"]
