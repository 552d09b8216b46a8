"""k8s/parallel.py: per-object requests a few at a time, outcomes in the jobs' order, errors returned."""

from __future__ import absolute_import, division, print_function

import threading
import time

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import in_order, streamed, workers_problem


def test_outcomes_in_the_jobs_order_whatever_order_they_finish_in():
    def slow_first(n):
        time.sleep(0.02 * (5 - n))
        return n * 10
    assert in_order(slow_first, range(5), workers=5) == [(0, None), (10, None), (20, None), (30, None), (40, None)]


def test_several_at_a_time_and_one_in_the_calling_thread():
    active, peak, lock = [0], [0], threading.Lock()

    def job(_n):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return threading.current_thread().name
    in_order(job, range(12), workers=4)
    assert 1 < peak[0] <= 4
    main = threading.current_thread().name
    assert all(name == main for name, _e in in_order(job, range(3), workers=1))


def test_an_error_is_returned_in_its_place_and_the_others_still_run():
    def job(n):
        if n == 1:
            raise ValueError("boom")
        return n
    out = in_order(job, [0, 1, 2], workers=3)
    assert out[0] == (0, None) and out[2] == (2, None)
    assert out[1][0] is None and isinstance(out[1][1], ValueError)


@pytest.mark.parametrize("value", [0, -1, True, "4"])
def test_a_worker_count_below_one_or_not_a_number_is_named(value):
    assert "workers is %r" % (value,) in workers_problem(value) and "1 or more" in workers_problem(value)


@pytest.mark.parametrize("value", [None, 1, 32])
def test_a_usable_worker_count_passes(value):
    assert workers_problem(value) is None


def test_streamed_hands_out_in_order_while_later_jobs_run():
    """Each outcome comes out in the jobs' order as soon as it is done, and while the caller holds it the workers
    go on with the jobs after it (at most ``ahead`` beyond it): the caller's slow bookkeeping overlaps them."""
    started, lock = [], threading.Lock()

    def job(n):
        with lock:
            started.append(n)
        time.sleep(0.01 * ((n * 7) % 3))
        return n
    seen = []
    for result, error in streamed(job, range(40), workers=4, ahead=8):
        assert error is None
        if result == 0:
            time.sleep(0.2)  # the caller busy with the first outcome: the workers go on meanwhile
            with lock:
                assert 4 <= len(started) <= 9, started  # went on, and no further than ``ahead`` + 1
        seen.append(result)
    assert seen == list(range(40))


def test_streamed_stop_starts_no_further_job_and_hands_out_the_started_ones():
    stop = threading.Event()
    started, lock = [], threading.Lock()

    def job(n):
        with lock:
            started.append(n)
        if n == 3:
            raise RuntimeError("boom at 3")
        time.sleep(0.005)
        return n
    out = []
    for result, error in streamed(job, range(100), workers=2, ahead=4, stop=stop):
        if error is not None:
            stop.set()
        out.append((result, str(error) if error else None))
    assert out[3] == (None, "boom at 3")
    assert [r for r, _e in out] == [0, 1, 2, None] + list(range(4, len(out)))  # every started job, in order
    assert len(out) == len(started) <= 9  # none started after the stop beyond those already in flight


def test_streamed_one_worker_runs_in_the_calling_thread_one_at_a_time():
    main = threading.current_thread().name
    stop = threading.Event()
    out = []
    for name, _e in streamed(lambda _n: threading.current_thread().name, range(5), workers=1, stop=stop):
        out.append(name)
        if len(out) == 2:
            stop.set()
    assert out == [main, main]


def test_streamed_left_early_waits_for_the_started_and_starts_no_more():
    started, lock = [], threading.Lock()

    def job(n):
        time.sleep(0.01)
        with lock:
            started.append(n)
        return n
    for result, _e in streamed(job, range(100), workers=3, ahead=3):
        if result == 1:
            break
    count = len(started)
    time.sleep(0.05)
    assert len(started) == count <= 6  # the pool is shut down: nothing runs after the loop is left


def test_streamed_stop_drops_the_queued_jobs_however_far_ahead():
    """With a long queue (``ahead`` far beyond the workers: attach keeps the API server busy through a
    checkpoint), a stop still starts no queued job: the workers drop them, and only the jobs that ran are handed
    out."""
    stop = threading.Event()
    ran, lock = [], threading.Lock()

    def job(n):
        with lock:
            ran.append(n)
        time.sleep(0.005)
        if n == 5:
            raise RuntimeError("boom at 5")
        return n
    out = []
    for result, error in streamed(job, range(500), workers=2, ahead=400, stop=stop):
        if error is not None:
            stop.set()
        out.append(result)
    assert len(out) == len(ran) <= 9, (len(out), len(ran))  # ~2 in flight at the stop, not the 400 queued
    assert out[:5] == [0, 1, 2, 3, 4] and out[5] is None
