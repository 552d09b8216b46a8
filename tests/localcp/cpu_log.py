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

ENV = "CALICO_OPS_TEST_CPU_LOG"
_TICK = os.sysconf("SC_CLK_TCK")


def _path():
    return os.environ.get(ENV)


def _append(record: dict) -> None:
    path = _path()
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(record) + "\n")


def _tree_cpu(root: int) -> float:
    """CPU seconds of the processes alive under ``root`` (not counting root itself)."""
    parents, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / _TICK
    total, frontier = 0.0, [root]
    while frontier:
        current = frontier.pop()
        for pid, parent in parents.items():
            if parent == current:
                total += cpu[pid]
                frontier.append(pid)
    return total


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _path():
        yield
        return
    before = snapshot()
    yield
    _append({"kind": "test", "test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
             **delta(before, snapshot())})


def summary(path: str, top: int = 40) -> str:
    tests, playbooks = [], []
    with open(path) as lines:
        for line in lines:
            record = json.loads(line)
            (tests if record["kind"] == "test" else playbooks).append(record)
    by_file: dict = {}
    for record in tests:
        name = record["test"].split("::")[0]
        entry = by_file.setdefault(name, [0, 0.0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += record["wall"]
        entry[2] += record["waited"]
        entry[3] += record["alive"]
    tasks: dict = {}
    for record in playbooks:
        name = record["test"].split("::")[0]
        entry = tasks.setdefault(name, [0, 0, 0.0])
        entry[0] += 1
        entry[1] += sum(v for k, v in record["tasks"].items() if k in ("ok", "failures", "skipped"))
        entry[2] += record["waited"]
    out = ["file                                              tests  wall s  waited s  alive s  playbooks tasks  pb cpu s"]
    for name, (count, wall, waited, alive) in sorted(by_file.items(), key=lambda kv: -(kv[1][2] + kv[1][3])):
        runs, ntasks, pb_cpu = tasks.get(name, (0, 0, 0.0))
        out.append(f"{name[-50:]:50} {count:5} {wall:7.0f} {waited:9.0f} {alive:8.0f} {runs:10} {ntasks:5} {pb_cpu:9.0f}")
    total_waited = sum(r["waited"] for r in tests)
    total_alive = sum(r["alive"] for r in tests)
    out.append(f"all: {len(tests)} tests, waited {total_waited:.0f} s, alive {total_alive:.0f} s, "
               f"{len(playbooks)} playbook runs, {sum(r['waited'] for r in playbooks):.0f} s of their CPU")
    out.append("")
    out.append("costliest tests (waited + alive CPU s, wall s)")
    for record in sorted(tests, key=lambda r: -(r["waited"] + r["alive"]))[:top]:
        out.append(f"{record['waited'] + record['alive']:7.0f} {record['wall']:7.0f}  {record['test']}")
    return "\n".join(out)


if __name__ == "__main__":
    print(summary(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40))
