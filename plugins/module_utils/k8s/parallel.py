# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes layer: per-object requests sent a few at a time, results kept in order.

A job that writes one object per request (owner references, node labels, host endpoint deletes) is bound by the
round trips, not by this machine: ``in_order`` runs ``func`` over the jobs on ``workers`` threads and returns
``[(result, exception)]`` in the jobs' order, so the caller does its bookkeeping (counts, reports, records) in one
thread, in a deterministic order, after the requests. The client is shared: kubernetes' ApiClient (urllib3's
pool) is safe across threads.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import itertools

try:
    from concurrent.futures import ThreadPoolExecutor
except ImportError:  # pragma: no cover - Python 2: one request at a time
    ThreadPoolExecutor = None

DEFAULT_WORKERS = 8
_DROPPED = object()  # streamed(): a queued job a worker took up after the stop


def workers_problem(value, name="workers"):
    """A message naming the option when ``value`` is not a usable worker count (1 or more), else None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return "%s is %r: give the number of requests to send at a time, 1 or more (default %d)" % (
            name, value, DEFAULT_WORKERS)
    return None


def _call(func, job):
    """``(func(job), None)``, or ``(None, the exception)``: one job's outcome, an error returned, not raised."""
    try:
        return func(job), None
    except Exception as exc:  # pylint: disable=broad-except
        return None, exc


def in_order(func, jobs, workers=DEFAULT_WORKERS):
    """[(result, exception)] of ``func`` over ``jobs``, in the jobs' order; ``workers`` at a time (1: in this
    thread). An exception is returned, not raised, so one failing job does not hide the others' outcomes."""
    jobs = list(jobs)
    workers = max(1, int(workers or 1))
    if workers <= 1 or len(jobs) <= 1 or ThreadPoolExecutor is None:
        return [_call(func, job) for job in jobs]
    with ThreadPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        return list(pool.map(lambda job: _call(func, job), jobs))


def streamed(func, jobs, workers=DEFAULT_WORKERS, ahead=None, stop=None):
    """Yield ``(result, exception)`` of ``func`` over ``jobs`` in the jobs' order, each as soon as it and every job
    before it are done, while ``workers`` threads go on with the jobs after it: at most ``ahead`` (default 4 x
    ``workers``) jobs are started beyond the one being handed out, so what the caller does with an outcome
    (counts, a checkpoint) overlaps the requests in flight instead of stopping them: a caller whose bookkeeping
    can take a while (a checkpoint of a large record) passes an ``ahead`` that covers it. Once ``stop`` (a
    ``threading.Event``) is set, no further job starts, however many are queued: a queued job that a worker takes
    up after the stop is dropped, neither run nor handed out; the ones that started are still handed out. Leaving
    the loop early waits for the running jobs and starts no other. One worker: each job runs in this thread and is
    handed out before the next starts."""
    jobs = iter(jobs)
    workers = max(1, int(workers or 1))
    if workers <= 1 or ThreadPoolExecutor is None:
        for job in jobs:
            if stop is not None and stop.is_set():
                return
            yield _call(func, job)
        return
    ahead = max(workers, int(ahead or 4 * workers))
    pool = ThreadPoolExecutor(max_workers=workers)
    started = collections.deque()

    def unless_stopped(job):
        if stop is not None and stop.is_set():
            return _DROPPED
        return _call(func, job)
    try:
        for job in itertools.islice(jobs, ahead):
            started.append(pool.submit(unless_stopped, job))
        while started:
            outcome = started.popleft().result()
            if stop is None or not stop.is_set():
                for job in itertools.islice(jobs, 1):
                    started.append(pool.submit(unless_stopped, job))
            if outcome is not _DROPPED:
                yield outcome
    finally:
        for future in started:
            future.cancel()
        pool.shutdown(wait=True)
