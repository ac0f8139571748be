"""adcheck's pytest plugin, loaded through the ``pytest11`` entry point.

Installing adcheck is enough; no ``-p`` flag or conftest is needed.

- ``assert_gradients(func, inputs, **check_keywords)``: a gradient check as
  an assertion; on failure the ``AssertionError`` carries adcheck's report
  (each failing pair, the worst entry, the diagnosis, both Jacobians).
  Import it, or take the fixture of the same name.
- ``@pytest.mark.adcheck_ops(*patterns, family=None, dtypes=None,
  checks=None, engine="refengine")``: one test per OpInfo, dtype and sample
  of the registry, with ids such as ``test_x[sin-float64-sample3]``; the
  test takes an ``adcheck_case`` argument (an ``OpCase``) and calls
  ``adcheck_case.assert_passes()``, whose failure text ends with the
  Python that reruns the check (``runner.rebuild``). ``engine="torch"``
  checks torch's own formulas. Runs under pytest-xdist (``-n auto``).
- ``@pytest.mark.adcheck_kernel(kernel, against=ref, inputs=...)``: one
  test per kernel, dtype and comparison, each kernel judged against its
  float64 reference (``pytest_adcheck.kernelcases``, docs/kernels.md); the
  test takes ``adcheck_kernel`` and calls ``adcheck_kernel.assert_passes()``.
- ``--adcheck-plugin FILE`` (or the ini option ``adcheck_plugins``) adds the
  OpInfos of a plugin file (with a space or ``=``: the rootdir stays the
  project's, see ``pytest_adcheck.rootdir``); ``--adcheck-seed N`` sets the
  base seed; ``--adcheck-shard K/N`` collects only shard K of N of each
  marked selection, as ``adcheck ops --shard K/N`` runs it.
- An op of a marked test whose every case was skipped (nothing judged) fails
  the session, as ``adcheck ops`` exits 3 for it; ``--adcheck-allow-empty``
  accepts it (``pytest_adcheck.verdicts``).

Example::

    import pytest
    import adcheck.refengine as E
    from pytest_adcheck import assert_gradients

    def test_my_sin():
        assert_gradients(MySin.apply, E.randn(3, dtype=E.float64, requires_grad=True))

    @pytest.mark.adcheck_ops("sin", "exp*", dtypes="float64")
    def test_registry(adcheck_case):
        adcheck_case.assert_passes()

Importing this package imports neither refengine, gradcheck nor NumPy.
"""
from pytest_adcheck.assertion import assert_gradients

# pytest finds hooks and fixtures as attributes of the entry point's module
from pytest_adcheck.plugin import (
    adcheck_case_fixture,  # noqa: F401
    adcheck_kernel_fixture,  # noqa: F401
    assert_gradients_fixture,  # noqa: F401
    pytest_addoption,  # noqa: F401
    pytest_configure,  # noqa: F401
    pytest_generate_tests,  # noqa: F401
    pytest_load_initial_conftests,  # noqa: F401
    pytest_runtest_makereport,  # noqa: F401
)

__all__ = ["assert_gradients"]
