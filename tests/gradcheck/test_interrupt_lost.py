"""The timer behind ``--timeout`` and the explored points' deadlines
(``gradcheck.core.interrupt``) where its exception used to be lost.

Python prints and drops an exception raised in a garbage-collection callback,
a finalizer or a ``__del__``. JAX runs a callback after every collection, so
a point whose code collects garbage in a loop (jaxopt's host solvers) had its
timeout dropped again and again: the quick pass's 5 s point ran 240 s, and
was then counted as passed. And a timeout raised inside ``jax.pure_callback``
reached the explorer wrapped in JAX's own error, and the point was counted
"outside the domain". Each loop below is bounded: a lost timeout lets it
finish, which is the failure."""
from __future__ import annotations

import gc
import sys
import time

import pytest

from adcheck.gradcheck.core.interrupt import interrupting
from adcheck.gradcheck.explore.deadline import Timeout, deadline

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no interval timer on Windows")


class Stop(BaseException):
    pass


class SlowToDie:
    def __del__(self):
        time.sleep(0.01)     # where the time goes: the signal is handled in here


def test_a_timeout_that_fires_in_a_del_is_raised_outside_it():
    done, total = 0, []
    with pytest.raises(Stop):
        with interrupting(0.1, Stop):
            for done in range(400):    # 4 s if the stop were lost
                SlowToDie()
                total.append(done)     # (a call outside the finalizer: raised there)
    assert done < 399
    assert sys.getprofile() is None


def test_a_timeout_that_fires_in_a_gc_callback_is_raised_outside_it():
    def slow_callback(phase, info):
        time.sleep(0.01)
    gc.callbacks.append(slow_callback)
    done = 0
    try:
        with pytest.raises(Stop):
            with interrupting(0.1, Stop):
                for done in range(200):
                    gc.collect()
    finally:
        gc.callbacks.remove(slow_callback)
    assert done < 199


def test_a_timeout_wrapped_by_the_code_under_check_is_still_a_timeout():
    with pytest.raises(Timeout):
        with deadline(0.1):
            try:
                time.sleep(2)
            except BaseException as exc:     # as jax.pure_callback reports a host error
                raise RuntimeError("the host callback failed") from exc


def test_an_error_of_the_code_before_its_time_stays_its_own():
    with pytest.raises(ZeroDivisionError):
        with deadline(5.0) as alarm:
            1 / 0
    assert not alarm.expired


def test_a_profiler_in_place_is_put_back():
    seen = []

    def profiler(frame, event, arg):
        seen.append(event)
    sys.setprofile(profiler)
    try:
        with pytest.raises(Stop):
            with interrupting(0.1, Stop):
                for _ in range(400):
                    SlowToDie()
                    len(seen)
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)


class Inner(BaseException):
    pass


def test_an_inner_block_leaves_the_outer_timer_running():
    # (an explored point's deadline inside a task's --timeout cancelled the task's
    # timer: the task ran on until its worker was killed, its results lost)
    done = 0
    with pytest.raises(Stop):
        with interrupting(0.3, Stop):
            with interrupting(5.0, Inner):
                pass
            for done in range(300):      # 3 s if the outer stop were lost
                time.sleep(0.01)
    assert done < 299


def test_the_outer_time_running_out_inside_an_inner_block_raises_the_outers():
    done = 0
    with pytest.raises(Stop):
        with interrupting(0.2, Stop):
            with interrupting(5.0, Inner):
                for done in range(300):
                    time.sleep(0.01)
    assert done < 299


def test_an_inner_time_running_out_first_raises_the_inners_and_the_outer_runs_on():
    with pytest.raises(Stop):
        with interrupting(0.6, Stop):
            with pytest.raises(Inner):
                with interrupting(0.1, Inner):
                    for _ in range(300):
                        time.sleep(0.01)
            for _ in range(300):
                time.sleep(0.01)


def test_a_timeout_that_fires_in_the_unraisable_hook_waits_until_it_returns(monkeypatch):
    # pytest's hook (and any in Python) formats an exception a finalizer dropped;
    # raised in there, the timeout was the hook's own failure ("Failed to process
    # unraisable exception") and the check under test went on
    finished = []

    def hook(unraisable):
        for _ in range(30):    # 0.3 s: the timer fires in here
            time.sleep(0.01)
            str(unraisable.exc_value)
        finished.append(True)

    class Drops:
        def __del__(self):
            raise ValueError("dropped by a finalizer")

    monkeypatch.setattr(sys, "unraisablehook", hook)
    with pytest.raises(Stop):
        with interrupting(0.1, Stop):
            Drops()
            for _ in range(400):
                time.sleep(0.01)
                str(0)
    assert finished == [True]
