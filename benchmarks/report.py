"""The pure parts of ``make bench``: medians, ratios, predictions of naive runs, the Markdown table and the plot.

Nothing here touches a cluster; tests/project/test_bench_report.py covers it. ``results`` is the dict run.py
writes to benchmarks/results/results.json: ``{"jobs": {job: {str(N): row}}, ...}`` where a row is::

    {"n": 1000, "unit": "dependents",
     "ours": {"runs_s": [..], "median_s": .., "reads": .., "writes": .., "changed": .., "rerun_writes": 0},
     "naive": {"runs_s": [..], "median_s": .., "reads": .., "writes": ..}        # measured
          or {"predicted_s": .., "from_n": 100, "not_measured": "reason"}        # a prediction, never measured
     "limit": {"runs_s": [..], "median_s": .., "reads": .., "writes": .., "concurrency": 16, "sweep_s": {..}},
     "kubectl": {"runs_s": [..], "median_s": .., "reads": .., "writes": ..}      # where the job has them
     }
"""

import math

JOB_ORDER = ("preflight", "owner_references", "host_endpoint_migration", "install_ebpf", "upgrade", "datastore_migration",
             "operator_migration", "disable_ebpf")


def median(values):
    """The median of a non-empty list of numbers (mean of the middle two for an even count)."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2.0


def ratio(naive_s, ours_s):
    """naive / ours, rounded to one decimal (None when either is missing or ours is 0)."""
    if naive_s is None or ours_s is None or ours_s <= 0:
        return None
    return round(float(naive_s) / ours_s, 1)


def predict(measured, n):
    """The naive time at ``n`` predicted from the per-object rate of the largest measured size below ``n``.

    ``measured`` maps size -> median seconds. Returns ``(seconds, from_size)``, or ``(None, None)`` when no
    smaller size was measured (then the run cannot be skipped: there is nothing to predict from).
    """
    below = [size for size in measured if size < n and measured[size] is not None]
    if not below:
        return None, None
    base = max(below)
    return measured[base] / float(base) * n, base


def should_skip(measured, n, budget_s):
    """(skip, predicted_s, from_size): skip a naive run whose predicted time exceeds the budget."""
    predicted, base = predict(measured, n)
    if predicted is None or budget_s is None:
        return False, predicted, base
    return predicted > budget_s, predicted, base


def fmt_s(value):
    if value is None:
        return "-"
    if value >= 100:
        return "%.0f" % value
    if value >= 10:
        return "%.1f" % value
    return "%.2f" % value


def _requests(side):
    if not side or side.get("reads") is None:
        return "-"
    return "%d / %d" % (side["reads"], side["writes"])


def measured_cell(side):
    """A measured median; "(1 run)" / "(2 runs)" after it when fewer than three runs were made."""
    if not side or side.get("median_s") is None:
        return "-"
    runs = len(side.get("runs_s") or [])
    if 0 < runs < 3:
        return "%s (%d run%s)" % (fmt_s(side["median_s"]), runs, "" if runs == 1 else "s")
    return fmt_s(side["median_s"])


def naive_cell(naive):
    """The naive column: a measured median, or a prediction marked as such."""
    if not naive:
        return "-"
    if naive.get("median_s") is not None:
        return measured_cell(naive)
    if naive.get("predicted_s") is not None:
        return "not measured (predicted ~%s s)" % fmt_s(naive["predicted_s"])
    return "not measured"


def sorted_rows(results):
    jobs = results.get("jobs", {})
    order = [j for j in JOB_ORDER if j in jobs] + sorted(j for j in jobs if j not in JOB_ORDER)
    for job in order:
        for key in sorted(jobs[job], key=int):
            yield job, jobs[job][key]


def render_markdown(results):
    """The results table (Markdown). Predictions are never put in the measured columns: the ratio and the
    naive request counts of a row whose naive run was not measured are left empty."""
    lines = [
        "| job | N | ours median s | naive median s | ratio naive/ours | requests reads / writes: ours | "
        "requests reads / writes: naive | objects changed | re-run writes (ours) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for job, row in sorted_rows(results):
        ours, naive = row.get("ours") or {}, row.get("naive") or {}
        measured = naive.get("median_s") is not None
        r = ratio(naive.get("median_s"), ours.get("median_s")) if measured else None
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            job, "%d %s" % (row["n"], row.get("unit", "")) if row.get("unit") else row["n"],
            measured_cell(ours), naive_cell(naive), "%.1fx" % r if r is not None else "-",
            _requests(ours), _requests(naive) if measured else "-",
            ours.get("changed", "-") if ours.get("changed") is not None else "-",
            ours.get("rerun_writes", "-") if ours.get("rerun_writes") is not None else "-"))
    return "\n".join(lines) + "\n"


def per_second(side):
    """Writes per second of a measured side (None when not measured or without writes)."""
    if not side or side.get("median_s") is None or not side.get("writes") or side["median_s"] <= 0:
        return None
    return side["writes"] / float(side["median_s"])


def render_limits(results):
    """The rows measured against the limit (the job's own requests from a bare client at its best concurrency) and
    kubectl bulk: medians, writes per second, ours' throughput as a share of the limit's (for a read-only job, the
    limit's time over ours'), kubectl bulk's time over ours' (above 1: ours is faster), and each contender's
    requests. Empty when no row has them."""
    lines = [
        "| job | N | ours median s | limit median s (at concurrency c) | kubectl bulk median s | writes/s ours / limit / "
        "kubectl | ours / limit (throughput) | kubectl / ours (time) | requests reads / writes: ours ; limit ; "
        "kubectl |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = 0
    for job, row in sorted_rows(results):
        ours, lim, kub = row.get("ours") or {}, row.get("limit") or {}, row.get("kubectl") or {}
        if lim.get("median_s") is None and kub.get("median_s") is None:
            continue
        rows += 1
        rates = [per_second(x) for x in (ours, lim, kub)]
        share = (rates[0] / rates[1]) if rates[0] and rates[1] else None
        if share is None and not ours.get("writes") and not lim.get("writes"):
            if lim.get("median_s") and ours.get("median_s"):  # a read-only job: the same reads, in time
                share = float(lim["median_s"]) / ours["median_s"]
        against = ratio(kub.get("median_s"), ours.get("median_s"))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            job, "%d %s" % (row["n"], row.get("unit", "")) if row.get("unit") else row["n"], measured_cell(ours),
            measured_cell(lim) + (" at c=%d" % lim["concurrency"] if lim.get("concurrency") else ""),
            measured_cell(kub), " / ".join("%.0f" % r if r else "-" for r in rates),
            "%.2f" % share if share is not None else "-", "%.1fx" % against if against is not None else "-",
            " ; ".join(_requests(x) for x in (ours, lim, kub))))
    return "\n".join(lines) + "\n" if rows else ""


def render_floor(results):
    """Ours' time split into Ansible's own cost and the rest, where measured: the ansible-playbook runs and the tasks
    ours ran (waits left out as from its time), the Ansible floor they amount to at the costs measured in the same
    run (a play without tasks; one task of a collection module that does no work; one controller task), ours' time
    above that floor (the job's own work, and whatever code here could still cut); where the limit was measured, the
    job's requests' own time (the limit's median) and what is left of ours above the floor and the requests (the
    modules' work in Python beyond a module that does nothing: their larger code to load, the documents to parse,
    the answers to read, arguments and results through Ansible); and kubectl bulk's time with ours' gap to it and
    the share of that gap the floor explains. Empty when no row has a floor."""
    lines = [
        "| job | N | ours median s | playbooks / module tasks / controller tasks | start-up s, per module task s, "
        "per controller task s | Ansible floor s | ours above the floor s | limit median s | ours above the floor "
        "and the limit s | kubectl bulk median s | gap to kubectl bulk s (floor's share) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = 0
    for job, row in sorted_rows(results):
        ours = row.get("ours") or {}
        costs, floor = ours.get("ansible_costs"), ours.get("ansible_floor_s")
        if floor is None or not costs or ours.get("median_s") is None:
            continue
        profile = ((ours.get("runs") or [{}])[-1]).get("profile") or {}
        tasks = profile.get("floor_tasks") or {}
        lim = (row.get("limit") or {}).get("median_s")
        kub = (row.get("kubectl") or {}).get("median_s")
        gap = ours["median_s"] - kub if kub is not None else None
        rows += 1
        lines.append("| %s | %s | %s | %s / %s / %s | %.2f, %.3f, %.3f | %s | %s | %s | %s | %s | %s |" % (
            job, "%d %s" % (row["n"], row.get("unit", "")) if row.get("unit") else row["n"], fmt_s(ours["median_s"]),
            profile.get("playbooks", "-"), tasks.get("module", "-"), tasks.get("control", "-"),
            costs["startup_s"], costs["module_task_s"], costs["control_task_s"], fmt_s(floor),
            fmt_s(max(0.0, ours["median_s"] - floor)),
            fmt_s(lim) if lim is not None else "-",
            fmt_s(max(0.0, ours["median_s"] - floor - lim)) if lim is not None else "-",
            fmt_s(kub) if kub is not None else "-",
            ("%s (%.0f%%)" % (fmt_s(gap), 100.0 * min(floor, gap) / gap)) if gap is not None and gap > 0 else "-"))
    return "\n".join(lines) + "\n" if rows else ""


def _when(side, row):
    at = side.get("measured_at") or row.get("measured_at")
    load = side.get("loadavg_end") or row.get("loadavg_end")
    if not at:
        return "-"
    return "%s (load %.1f)" % (at.replace("+00:00", "Z"), load[0]) if load else at


def render_accounting(results):
    """Where ours' writes go (objects changed once each, field handovers, its own record) and when each side was
    measured, at which load average (1 min, at the end of the size)."""
    lines = [
        "| job | N | ours writes | objects changed | handover writes | record writes | ours measured | "
        "naive measured |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for job, row in sorted_rows(results):
        ours, naive = row.get("ours") or {}, row.get("naive") or {}
        if ours.get("writes") is None:
            continue
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            job, row["n"], ours["writes"], ours.get("changed", "-"), ours.get("handover_writes", 0),
            ours.get("record_writes", 0), _when(ours, row),
            _when(naive, row) if naive.get("median_s") is not None else "not measured"))
    return "\n".join(lines) + "\n"


def plot_series(results):
    """Per job: ours measured points, naive measured points, naive predicted points, and the limit's and kubectl
    bulk's measured points, as (N, seconds) lists."""
    out = {}
    for job, row in sorted_rows(results):
        series = out.setdefault(job, {"ours": [], "naive": [], "predicted": [], "limit": [], "kubectl": []})
        ours, naive = row.get("ours") or {}, row.get("naive") or {}
        if ours.get("median_s") is not None:
            series["ours"].append((row["n"], ours["median_s"]))
        for other in ("limit", "kubectl"):
            if (row.get(other) or {}).get("median_s") is not None:
                series[other].append((row["n"], row[other]["median_s"]))
        if naive.get("median_s") is not None:
            series["naive"].append((row["n"], naive["median_s"]))
        elif naive.get("predicted_s") is not None:
            series["predicted"].append((row["n"], naive["predicted_s"]))
    return out


def plot(results, path):
    """results.png: time against N, log-log, one panel per job with more than one size; measured points solid,
    predicted naive points hollow on a dashed line. Returns False when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    series = dict((job, s) for job, s in plot_series(results).items()
                  if len(set(n for n, _ in s["ours"] + s["naive"] + s["predicted"] + s["limit"] + s["kubectl"])) > 1)
    if not series:
        return False
    cols = min(3, len(series))
    rows = int(math.ceil(len(series) / float(cols)))
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows), squeeze=False)
    for ax, (job, s) in zip([a for row in axes for a in row], sorted(series.items(), key=lambda kv: _job_key(kv[0]))):
        if s["ours"]:
            ax.plot(*zip(*s["ours"]), "o-", color="tab:blue", label="ours (measured)")
        if s["naive"]:
            ax.plot(*zip(*s["naive"]), "s-", color="tab:red", label="naive loop (measured)")
        if s["predicted"]:
            last = s["naive"][-1:] if s["naive"] else []
            pts = last + s["predicted"]
            ax.plot(*zip(*pts), "--", color="tab:red", linewidth=1)
            ax.plot(*zip(*s["predicted"]), "s", markerfacecolor="none", color="tab:red",
                    label="naive loop (PREDICTED, not run)")
        if s["limit"]:
            ax.plot(*zip(*s["limit"]), "^-", color="tab:green", label="limit: bare client (measured)")
        if s["kubectl"]:
            ax.plot(*zip(*s["kubectl"]), "d-", color="tab:purple", label="kubectl bulk (measured)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(job)
        ax.set_xlabel("N (objects)")
        ax.set_ylabel("wall time, s (median of runs)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    for ax in [a for row in axes for a in row][len(series):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)
    plt.close(fig)
    return True


def _job_key(job):
    return (JOB_ORDER.index(job) if job in JOB_ORDER else len(JOB_ORDER), job)
