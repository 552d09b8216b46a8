"""One benchmark job over its sizes, and the results of several runs merged.

Per job and size: ``repeat`` runs of each contender, their median (``summarise``); ours is run once more after each run
and must make zero writes (``Job.check``). A naive run predicted (report.should_skip: from the per-object rate of the
largest smaller size measured) to take longer than the budget is not run: it is recorded as a prediction, never as a
measurement. A contender left out of the run keeps the figures of an earlier run (``previous``), each side with the
time and load it was measured at."""

import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from benchmarks import report
from benchmarks.costs import ansible_costs, ansible_floor
from benchmarks.harness import log, public

# contenders beside ours and the naive loop, run where the job defines them (a method of that name):
# limit - the job's own requests from a bare client at the best concurrency (benchmarks/limit.py);
# kubectl - the job scripted with kubectl alone, one process per step (benchmarks/kubectl_bulk/)
OTHER_CONTENDERS = ("limit", "kubectl")


def summarise(runs, key="wall_s"):
    last = runs[-1]
    out = {"runs_s": [r[key] for r in runs], "median_s": round(report.median([r[key] for r in runs]), 2)}
    for k in ("reads", "writes", "dry_run_writes", "changed", "record_writes", "handover_writes", "handover_skipped",
              "stand_in_writes"):
        if k in last:
            out[k] = last[k]
            values = set(r.get(k) for r in runs)
            if len(values) > 1:
                out[k + "_per_run"] = [r.get(k) for r in runs]
    out["runs"] = [public(r) for r in runs]
    return out


def _now():
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _stamped(side):
    """A contender's summary with the time it was measured and the load then."""
    side["measured_at"] = _now()
    side["loadavg_end"] = os.getloadavg()
    return side


def run_job(name, job_class, cluster, sizes, repeat, budget, workroot, previous=None, contenders=("ours", "naive")):
    """Yields (N, row) per size of job ``name`` (a ``job_class``). ``previous``: this job's rows of an earlier run,
    whose measured naive medians the predictions start from too (a run of only the larger sizes). A contender left out
    of ``contenders`` is not run: its figures of ``previous`` are kept (each keeps its own ``measured_at``)."""
    job = job_class(cluster, Path(tempfile.mkdtemp(prefix=name + "-", dir=str(workroot))))
    naive_measured = dict((int(n), row["naive"]["median_s"]) for n, row in (previous or {}).items()
                          if (row.get("naive") or {}).get("median_s") is not None)
    done = set()
    for requested in sizes:
        n = job.size(requested)
        if n in done:
            continue
        done.add(n)
        kept = (previous or {}).get(str(n)) or {}
        yield n, _size_row(job, name, n, repeat, budget, kept, naive_measured, contenders)


def _size_row(job, name, n, repeat, budget, kept, naive_measured, contenders):
    """The row of one size: the job's objects built, each contender run (or its ``kept`` figures), torn down."""
    row = {"n": n, "unit": job.unit}
    log("%s N=%d: setup" % (name, n))
    started = time.monotonic()
    job.setup(n)
    row["setup_s"] = round(time.monotonic() - started, 1)
    try:
        ours = _ours(job, name, n, repeat) if "ours" in contenders else None
        if ours or kept.get("ours"):
            row["ours"] = ours or kept["ours"]
        naive = _naive(job, name, n, repeat, budget, kept, naive_measured, contenders)
        if naive:
            row["naive"] = naive
        for extra in OTHER_CONTENDERS:
            if extra in contenders and hasattr(job, extra):
                row[extra] = _other(job, name, n, repeat, extra)
            elif kept.get(extra):
                row[extra] = kept[extra]
    finally:
        job.teardown()
    return row


def _ours(job, name, n, repeat):
    """Ours' ``repeat`` runs, each checked with its re-run, summarised with its Ansible floor; None if none ran."""
    runs, reruns = [], []
    for rep in range(repeat):
        m, rerun = job.ours(rep)
        job.check(m, rerun)
        runs.append(m)
        reruns.append(rerun)
        log("%s N=%d ours #%d: %.2fs, %d reads / %d writes; re-run %d writes" % (
            name, n, rep + 1, m["wall_s"], m["reads"], m["writes"], rerun["writes"]))
    if not runs:
        return None
    costs = None
    if all((m.get("profile") or {}).get("floor_tasks") for m in runs):
        costs = ansible_costs(job.cluster, job.ansible)
        for m in runs:
            m["ansible_floor_s"] = ansible_floor(m["profile"], costs)
    out = summarise(runs)
    if costs is not None:
        out["ansible_floor_s"] = round(report.median([m["ansible_floor_s"] for m in runs]), 2)
        out["ansible_costs"] = costs
        log("%s N=%d ours: Ansible floor %.2fs (%s)" % (name, n, out["ansible_floor_s"], costs))
    out["rerun_writes"] = max(r["writes"] for r in reruns)
    out["rerun_reads"] = reruns[-1]["reads"]
    out["rerun_median_s"] = round(report.median([r["wall_s"] for r in reruns]), 2)
    return _stamped(out)


def _naive(job, name, n, repeat, budget, kept, naive_measured, contenders):
    """The naive loop's figures of size ``n``: measured, or a prediction when it would exceed ``budget`` (or is not
    run and was never measured), or ``kept``'s; None when there is none."""
    skip, predicted, base = report.should_skip(naive_measured, n, budget)
    if "naive" not in contenders:
        if (kept.get("naive") or {}).get("median_s") is not None:
            return kept["naive"]
        if predicted is not None:  # a prediction again, from what is measured now
            return {"predicted_s": round(predicted, 1), "from_n": base, "prediction": True,
                    "not_measured": "not run (--contenders %s); predicted %.0f s from the per-object "
                                    "rate at N=%d" % (",".join(contenders), predicted, base)}
        return None
    if skip:
        log("%s N=%d naive: not run, predicted ~%.0fs" % (name, n, predicted))
        return {"predicted_s": round(predicted, 1), "from_n": base, "prediction": True,
                "not_measured": "predicted %.0f s > budget %.0f s (per-object rate at N=%d)" % (
                    predicted, budget, base)}
    runs = []
    for rep in range(repeat):
        m = job.naive(rep)
        runs.append(m)
        log("%s N=%d naive #%d: %.2fs, %d reads / %d writes" % (name, n, rep + 1, m["wall_s"], m["reads"], m["writes"]))
    out = _stamped(summarise(runs))
    if predicted is not None:
        out["predicted_before_run_s"] = round(predicted, 1)
    naive_measured[n] = out["median_s"]
    return out


def _other(job, name, n, repeat, extra):
    """``repeat`` runs of the job's contender ``extra`` (limit, kubectl), summarised."""
    runs = []
    for rep in range(repeat):
        m = getattr(job, extra)(rep)
        runs.append(m)
        log("%s N=%d %s #%d: %.2fs, %d reads / %d writes%s" % (
            name, n, extra, rep + 1, m["wall_s"], m["reads"], m["writes"],
            (" at concurrency %d (sweep %s)" % (m["concurrency"], m["sweep_s"])) if "concurrency" in m else ""))
    out = summarise(runs)
    for key in ("concurrency", "sweep_s"):
        if key in runs[-1]:
            out[key] = runs[-1][key]
    return _stamped(out)


def merge_results(results, data):
    """Merge another run's results.json ``data`` into ``results``, per job, size and contender: a contender the other
    run did not measure keeps its figures here, and the time and load it was measured at (older rows keep them on the
    row only, which the new row replaces); the other run's runs are added once."""
    for name, rows in data.get("jobs", {}).items():
        mine = results["jobs"].setdefault(name, {})
        for n, row in rows.items():
            old = dict(mine.get(n) or {})
            for side in ("ours", "naive") + OTHER_CONTENDERS:
                if isinstance(old.get(side), dict) and side not in row:
                    kept = dict(old[side])
                    for key in ("measured_at", "loadavg_end"):
                        if kept.get(key) is None and old.get(key) is not None:
                            kept[key] = old[key]
                    old[side] = kept
            mine[n] = dict(old, **row)
    results.setdefault("runs", []).extend(m for m in data.get("runs", []) if m not in results["runs"])
    return results
