"""Documented autograd semantics as cases that run on refengine and on torch.

``run_suite(engine, areas=None)`` runs them and returns one ``CaseResult``
per case; ``areas()`` lists the areas; ``CASES`` holds the cases of the
areas imported so far. Engines are imported only when a suite runs.
"""
from conformance.case import CASES, Case, case
from conformance.runner import CaseResult, areas, load_cases, run_case, run_suite

__all__ = ["CASES", "Case", "CaseResult", "areas", "case", "load_cases", "run_case",
           "run_suite"]
