"""``adcheck ops`` starts the workers' fork server first and does not wait for
it: the server imports the libraries while the command imports its own and
plans, and no worker exists until the run starts them (a worker started
early made the command wait until the server had imported everything)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

#: in a fresh process (the fork server is one per process): the command's
#: ``prestart``, what it leaves, then a run of two tasks on the same pool
SCRIPT = textwrap.dedent("""
    import json, sys
    from multiprocessing import forkserver
    from adcheck.cli.runs import prestart
    from adcheck.runner.pool import shared_pool
    from adcheck.runner.registry import OpinfoRegistry
    from adcheck.runner.run import run_tasks
    from adcheck.runner.selection import plan, select
    from adcheck.runner.tasks import build_settings
    prestart(OpinfoRegistry())
    pool = shared_pool()
    seen = {"workers_after_prestart": len(pool.workers),
            "server": forkserver._forkserver._forkserver_pid is not None}
    registry = OpinfoRegistry()
    settings = build_settings(("reverse",))
    tasks = plan(select(registry, ("sin",), (), "refengine").infos, None, settings)
    outcome = run_tasks(tasks, 2)
    seen["statuses"] = sorted({r.status for r in outcome.results})
    seen["results"] = len(outcome.results)
    seen["workers_after_run"] = len(pool.workers)
    print(json.dumps(seen))
""")


def test_the_server_starts_first_and_the_run_forks_its_workers_from_it(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["workers_after_prestart"] == 0 and seen["server"]
    assert seen["statuses"] == ["passed"] and seen["results"] > 0
    assert seen["workers_after_run"] == 2
