"""runner: between the registry and gradcheck on one side and the CLI on the other.

It decides what to check and runs it; it prints nothing and exits nothing.
The ``adcheck`` command (``cli``) parses, calls it and renders what it
returns; the pytest plugin (``pytest_adcheck``) calls it too.

- ``runner.registry``: where ops come from, behind one interface
  (``OPINFO``, adcheck's own ``opinfo`` registry, is the default).
- ``runner.selection``: ``select`` ops by name patterns, families and
  engine; ``plan`` them as tasks (one per op and dtype).
- ``runner.tasks``: ``Settings``, made by ``build_settings`` (the one builder of
  a run: ``adcheck ops``, ``op``, ``check`` and the pytest marker), and the tasks
  (``OpTask``, ``TargetTask`` for a user's object); ``execute`` runs one,
  sample by sample.
- ``runner.policy``: ``Policy``, how every check of a run is run, validated
  when made; ``check_options``, the ``Options`` of one check.
- ``runner.record``: ``RunRecord``, what a report records of its run (its
  ``settings``), which the reproducers read.
- ``runner.checks``: ``run_checks``, the one function that runs the checks of
  one sample and turns each into a ``CheckResult``.
- ``runner.run``: ``run_tasks``, the one task runner: in worker processes
  (``runner.pool``, ``runner.runloop``, ``runner.worker``: a warm pool where
  a crash, an exit or a hang in C is that task's error, named by
  ``runner.deaths``), or in this process for the pytest plugin.
- ``runner.results``: ``CheckResult``, ``RunReport``, the exit statuses.
- ``runner.baseline``, ``runner.target``, ``runner.spec``: accepted
  failures, ``MODULE:OBJECT`` targets, and the ``--inputs`` spec language.
- ``runner.files``: files written whole or not at all.
- ``runner.reproduction``: ``rebuild`` and ``rebuild_target``, the public way to
  run any reported check again in a few lines of Python (every reproducer
  adcheck prints uses them); ``runner.rebuild(...)`` works directly.
- ``runner.errors``: ``RunnerError``, raised for bad input (never for a
  fault of the code under check, which is a result).

Example::

    from adcheck.runner.registry import OPINFO
    from adcheck.runner.run import run_tasks
    from adcheck.runner.selection import plan, select
    from adcheck.runner.tasks import build_settings

    tasks = plan(select(OPINFO, ("sin",)).infos, None, build_settings(("reverse",)))
    outcome = run_tasks(tasks, jobs=2)
    print(outcome.status, [r.status for r in outcome.results])

Importing ``runner`` imports none of its modules (and so no NumPy);
``runner.rebuild``, ``runner.rebuild_target`` and ``runner.Rebuilt`` load
``runner.reproduction`` on first use.
"""
if not __name__.startswith("adcheck."):     # the checkout's folder, imported by its short name
    raise ImportError(f"import adcheck.{__name__}, not {__name__}: adcheck's packages live "
                      "under the name 'adcheck' (see the README)")

_REBUILD = ("rebuild", "rebuild_target", "Rebuilt")


def __getattr__(name: str):
    if name in _REBUILD:
        import importlib
        return getattr(importlib.import_module("adcheck.runner.reproduction"), name)
    raise AttributeError(f"module 'runner' has no attribute {name!r}")
