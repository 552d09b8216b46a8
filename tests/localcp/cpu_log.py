"""Where make test's CPU goes, test by test (issue 53 item 6: "profile the integration pool").

With ``CALICO_OPS_TEST_CPU_LOG`` naming a file, each test appends one JSON line: its wall time, the CPU time of
everything its pytest process ran meanwhile (ansible-playbook and its workers, module processes, kubectl: the
children waited for) and of the long-lived processes under it (control planes, the pod runner's Calico
components, still running), and what the machine's CPUs did in that time; each ansible-playbook run of the
harness (``localcp.fixtures.Ansible.playbook``) appends one line with its task counts. Off, it does nothing.

``python -m localcp.cpu_log FILE`` sums such a file by test file and lists the costliest tests.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

import pytest

from . import procs

ENV = "CALICO_OPS_TEST_CPU_LOG"
_TICK = os.sysconf("SC_CLK_TCK")  # /proc/stat counts in clock ticks


def _path():
    return os.environ.get(ENV)


def _append(record: dict) -> None:
    path = _path()
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(record) + "\n")


def _tree_cpu(root: int) -> float:
    """CPU seconds of the processes alive under ``root`` (not counting root itself)."""
    table = procs.table()
    return sum(table[pid][1] for pid in procs.descendants(root, table))


def _machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the machine since boot."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / _TICK, sum(values) / _TICK


def snapshot() -> dict:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    busy, total = _machine_busy()
    return {"t": time.monotonic(), "children": children.ru_utime + children.ru_stime,
            "self": me.ru_utime + me.ru_stime, "alive": _tree_cpu(os.getpid()), "busy": busy, "total": total}


def delta(before: dict, after: dict) -> dict:
    return {"wall": round(after["t"] - before["t"], 2),
            "waited": round(after["children"] - before["children"], 2),
            "alive": round(after["alive"] - before["alive"], 2),
            "pytest": round(after["self"] - before["self"], 2),
            "machine_busy": round(after["busy"] - before["busy"], 2),
            "machine_total": round(after["total"] - before["total"], 2)}


def playbook_record(name: str, before: dict, data: dict) -> None:
    """One ansible-playbook run: its task counts (the JSON callback's stats) and CPU."""
    if not _path():
        return
    stats = data.get("stats") or {}
    counts = {}
    for host in stats.values():
        for key, value in host.items():
            counts[key] = counts.get(key, 0) + value
    _append({"kind": "playbook", "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
             "worker": os.environ.get("PYTEST_XDIST_WORKER", ""), "playbook": name,
             "tasks": counts, **delta(before, snapshot())})


def command_record(command: str, args) -> None:
    """One helper process a test ran (``kubectl``, ``podserve``): which, with its first arguments, so the summary can
    count them by test file and by verb."""
    if not _path():
        return
    _append({"kind": "command", "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
             "command": command, "args": [str(a) for a in args[:2]]})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _path():
        yield
        return
    before = snapshot()
    yield
    _append({"kind": "test", "test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
             **delta(before, snapshot())})


def _cpu(record: dict) -> float:
    """A test's CPU: waited-for processes plus the growth of those still alive. Only the sum means something: a
    control plane stopped at a test's end moves its whole CPU from ``alive`` to ``waited``."""
    return record["waited"] + record["alive"]


def summary(path: str, top: int = 40) -> str:
    """By test file: tests, wall and CPU seconds, the harness's playbook runs, their tasks (ok, failed, skipped) and
    CPU; then the ``top`` costliest tests."""
    tests, files, commands = [], {}, {}
    with open(path) as lines:
        for line in lines:
            record = json.loads(line)
            if record["kind"] == "command":
                key = (record["command"], record["test"].split("::")[0], " ".join(record["args"][:1]))
                commands[key] = commands.get(key, 0) + 1
                continue
            entry = files.setdefault(record["test"].split("::")[0], [0, 0.0, 0.0, 0, 0, 0.0])
            if record["kind"] == "test":
                tests.append(record)
                entry[0] += 1
                entry[1] += record["wall"]
                entry[2] += _cpu(record)
            else:
                entry[3] += 1
                entry[4] += sum(v for k, v in record["tasks"].items() if k in ("ok", "failures", "skipped"))
                entry[5] += record["waited"]
    out = ["%-50s %5s %7s %7s %9s %6s %8s" % ("file", "tests", "wall s", "CPU s", "playbooks", "tasks", "their s")]
    for name, e in sorted(files.items(), key=lambda kv: -kv[1][2]):
        out.append("%-50s %5d %7.0f %7.0f %9d %6d %8.0f" % (name[-50:], e[0], e[1], e[2], e[3], e[4], e[5]))
    out.append("all: %d tests, %.0f CPU s; %d playbook runs, %.0f CPU s" % (
        len(tests), sum(e[2] for e in files.values()), sum(e[3] for e in files.values()),
        sum(e[5] for e in files.values())))
    out += ["", "costliest tests (CPU s, wall s)"]
    out += ["%7.0f %7.0f  %s" % (_cpu(r), r["wall"], r["test"]) for r in sorted(tests, key=_cpu, reverse=True)[:top]]
    if commands:
        out += ["", "helper processes the tests ran (%d): runs, command, file, first argument" % sum(commands.values())]
        out += ["%7d  %s %s %s" % (n, c, f, a) for (c, f, a), n in sorted(commands.items(), key=lambda kv: -kv[1])[:top]]
    return "\n".join(out)


if __name__ == "__main__":
    print(summary(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40))
