"""One (op, dtype) of the op_db survey, in a worker process.

For each of the first samples and each check, three tools judge the same
sample (rebuilt afresh for each, so that nothing one tool leaves behind, a
perturbed input or a ``.grad``, reaches the next): torch's gradcheck as
PyTorch's test calls it, adcheck's ``gradcheck.gradcheck`` (or
``gradgradcheck``) with the same flags, and adcheck's
``gradcheck.check(..., precise=True)``. Each runs under a timer; anything it
raises, ``MemoryError`` included, becomes its result. Before each tool the
worker says which it starts, so the parent can name the culprit if the
process dies.
"""
from __future__ import annotations

import signal
import time
import traceback
from itertools import islice

#: the tools, in the order they run (``torch_slow``, torch's gradcheck with
#: fast_mode=False, is there to time adcheck's slow-mode checks against; not by default)
TOOLS = ("torch", "adcheck_gradcheck", "adcheck_precise")
EXTRA_TOOLS = ("torch_slow",)

MESSAGE_CHARS = 1500


class SampleTimeout(BaseException):
    """Raised by the timer; a BaseException so that no ``except Exception`` in the
    code under check can swallow it."""


def _on_alarm(signum, frame):
    raise SampleTimeout()


def setup(threads: int, memory_gb: float | None) -> None:
    """Worker initialisation: torch's thread count, an address-space cap (so that an
    oversized allocation raises MemoryError instead of waking the OOM killer), the timer."""
    import resource

    import torch
    torch.set_num_threads(threads)
    if memory_gb:
        limit = int(memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _on_alarm)


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " ..."


def _failures(report) -> list:
    keep = ("check", "mode", "against", "out_idx", "in_idx", "max_error", "where", "tolerance",
            "diagnosis", "detail")
    return [{k: v for k, v in f.to_dict().items() if k in keep} for f in report.failures[:4]]


def _timed(fn, timeout: float) -> dict:
    """``fn()`` under the timer, as a result dict (status pass, fail, error or timeout)."""
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = fn()
    except SampleTimeout:
        result = {"status": "timeout", "error": "Timeout",
                  "message": f"no verdict within {timeout:g} s"}
    except BaseException as exc:  # noqa: BLE001 - every outcome is data here
        if isinstance(exc, KeyboardInterrupt):
            raise
        result = _exception(exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    result["seconds"] = time.perf_counter() - start
    return result


def _exception(exc: BaseException) -> dict:
    name = type(exc).__name__
    status = "fail" if name == "GradcheckError" else "error"
    out = {"status": status, "error": name, "message": _short(exc)}
    report = getattr(exc, "report", None)
    if report is not None:
        out["failures"] = _failures(report)
        out["diagnosis"] = report.diagnosis
    if status == "error":
        frames = traceback.extract_tb(exc.__traceback__)
        out["where"] = [f"{f.filename.rsplit('site-packages/', 1)[-1]}:{f.lineno} {f.name}"
                        for f in frames[-3:]]
    return out


def _torch(entry, sample, check):
    verdict = entry.torch_verdict(sample, check)
    if verdict.passed:
        return {"status": "pass"}
    status = "fail" if verdict.error == "GradcheckError" else "error"
    return {"status": status, "error": verdict.error, "message": _short(verdict.message)}


def _torch_slow(entry, sample, check):
    from adcheck.opinfo.torchdb.call import torch_verdict
    runs = [(name, dict(flags, fast_mode=False)) for name, flags in entry.torch_runs(check)]
    verdict = torch_verdict(entry.call(sample), runs)
    if verdict.passed:
        return {"status": "pass"}
    status = "fail" if verdict.error == "GradcheckError" else "error"
    return {"status": status, "error": verdict.error, "message": _short(verdict.message)}


def _adcheck_gradcheck(entry, sample, check):
    from adcheck import gradcheck
    call = entry.call(sample)
    for name, flags in entry.torch_runs(check):
        getattr(gradcheck, name)(call.func, call.inputs, seed=0, **flags)
    return {"status": "pass"}


def _adcheck_precise(entry, sample, check, dtype):
    from adcheck import gradcheck
    call = entry.call(sample)
    options = entry.adcheck_options(check, dtype, precise=True)
    report = gradcheck.check(call.func, call.inputs, seed=0, name=entry.name, **options)
    if report.passed:
        return {"status": "pass"}
    return {"status": "fail", "message": _short(report.message()),
            "failures": _failures(report), "diagnosis": report.diagnosis}


def _sample_info(entry, dtype, index):
    sample = entry.sample(index, dtype)
    return sample, {"sample_name": sample.name, "conjugated": sample.conjugated,
                    "inputs": [list(t.shape) for t in entry.call(sample).inputs]}


def run_task(task: dict, send) -> None:
    """Run every sample, check and tool of ``task``; ``send(kind, payload)`` streams
    ``("start", key)`` before each tool and ``("record", record)`` after each sample."""
    from adcheck.opinfo import torchdb
    entry = torchdb.get(task["op"])
    dtype = task["dtype"]
    count = sum(1 for _ in islice(entry.sample_inputs(dtype), task["samples"]))
    for index in range(count):
        for check in task["checks"]:
            if not entry.supports(check, dtype):
                continue
            record = {"op": entry.name, "family": entry.family, "dtype": dtype,
                      "sample": index, "check": check}
            kf = entry.known_failure(f"torch_{check}", dtype)
            record["known"] = None if kf is None else {"kind": kf.kind, "reason": kf.reason}
            for tool in task.get("tools", TOOLS):
                send("start", dict(record, tool=tool))
                record[tool] = _timed(lambda: _one(entry, dtype, index, check, tool, record),
                                      task["timeout"])
            send("record", record)


def _one(entry, dtype, index, check, tool, record):
    sample, info = _sample_info(entry, dtype, index)
    record.update(info)
    if tool == "torch":
        return _torch(entry, sample, check)
    if tool == "torch_slow":
        return _torch_slow(entry, sample, check)
    if tool == "adcheck_gradcheck":
        return _adcheck_gradcheck(entry, sample, check)
    return _adcheck_precise(entry, sample, check, dtype)
