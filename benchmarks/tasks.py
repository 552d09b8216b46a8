"""What ansible-playbook's JSON output (the ``json`` stdout callback) says of a play's tasks: each task's duration,
the time spent waiting (tasks named "wait", or the ``waited_s`` a task that applies and then waits reports), and the
profile of a run - tasks per module, the slowest, the tasks the Ansible floor (costs.py) is computed from."""

import re

from benchmarks.limit import epoch

WAIT = r"\bwait"  # a task whose name matches is (or includes) a wait

# tasks Ansible runs in the controller's own process (no module sent to the target); every other task runs a module
CONTROL_ACTIONS = frozenset("ansible.builtin." + a for a in (
    "set_fact", "assert", "debug", "include_tasks", "import_tasks", "include_role", "import_role",
    "validate_argument_spec", "set_stats", "meta", "fail", "include_vars", "pause")) | frozenset((
        "(skipped)", "calico_ops.lifecycle.controller_files"))  # an action plugin that runs no module


def _tasks(data):
    """Every task result of the JSON output, play after play."""
    for play in data.get("plays", []):
        yield from play.get("tasks", [])


def _name(task):
    return task.get("task", {}).get("name", "")


def _span(task):
    """(start, end) epoch seconds of a task, or None when the output has no duration for it."""
    d = task.get("task", {}).get("duration") or {}
    if not (d.get("start") and d.get("end")):
        return None
    return epoch(d["start"]), epoch(d["end"])


def _task_seconds(task):
    span = _span(task)
    return span[1] - span[0] if span else 0.0


def task_result(data, prefix):
    """The localhost result of the first task whose name (role prefix removed) starts with ``prefix``."""
    for t in _tasks(data):
        if _name(t).split(" : ", 1)[-1].startswith(prefix):
            hosts = t.get("hosts") or {}
            return next(iter(hosts.values()), None)
    return None


def _waited(task):
    """The seconds a task that also does work says it spent waiting (``waited_s`` of its result: manifest_apply's
    apply of CRDs, then their wait), or None for a task that is a wait and nothing else."""
    values = [r.get("waited_s") for r in (task.get("hosts") or {}).values() if isinstance(r, dict)]
    values = [v for v in values if isinstance(v, (int, float))]
    return max(values) if values else None


def is_wait(task, pattern=WAIT):
    """A task whose whole time is waiting: its name matches ``pattern`` and it reports no ``waited_s``."""
    return bool(re.search(pattern, _name(task), re.I)) and _waited(task) is None


def wait_seconds(data, pattern=WAIT):
    """Seconds spent waiting (the JSON callback's task durations): the whole time of the tasks whose name matches
    ``pattern``, except that a task reporting ``waited_s`` (it applies, then waits) counts that part only."""
    total = 0.0
    for t in _tasks(data):
        if re.search(pattern, _name(t), re.I):
            waited = _waited(t)
            total += _task_seconds(t) if waited is None else min(waited, _task_seconds(t))
    return total


def wait_windows(data, pattern=WAIT):
    """(start, end) epoch seconds of ours' waiting, from the JSON callback's task durations: the whole of a task that
    is a wait (``is_wait``), the last ``waited_s`` of a task that applies and then waits."""
    out = []
    for t in _tasks(data):
        span = _span(t)
        if span is None or not re.search(pattern, _name(t), re.I):
            continue
        start, end = span
        waited = _waited(t)
        out.append((start if waited is None else max(start, end - waited), end))
    return out


def task_profile(data, top=12, exclude=None):
    """Where a play's time went (the JSON callback's task durations): the number of tasks run, their summed
    seconds, the ``top`` slowest as [name, seconds] (a looped task counts once), how many were skipped, per
    module (``action``) the tasks and seconds, and ``floor_tasks``: the tasks that are not waits (``is_wait`` with
    ``exclude``: their time is subtracted from the wall time; a task that applies and then waits counts), as
    ``module`` (a module sent to the target) and ``control`` (run in the controller: set_fact, assert, include_*,
    skipped, ...) - what the Ansible floor is computed from."""
    tasks, by_action, skipped, floor = [], {}, 0, {"module": 0, "control": 0}
    for t in _tasks(data):
        sec = _task_seconds(t)
        tasks.append((t.get("task", {}).get("name", "?"), sec))
        results = list((t.get("hosts") or {}).values())
        action = next((r.get("action") for r in results if r.get("action")), "?")
        if results and all(r.get("skipped") for r in results):
            skipped += 1
            action = "(skipped)"
        count, total = by_action.get(action, (0, 0.0))
        by_action[action] = (count + 1, total + sec)
        if not (exclude and is_wait(t, exclude)):
            floor["control" if action in CONTROL_ACTIONS else "module"] += 1
    slowest = sorted(tasks, key=lambda t: -t[1])[:top]
    return {"tasks": len(tasks), "task_s": round(sum(s for _n, s in tasks), 2), "skipped": skipped,
            "playbooks": 1, "floor_tasks": floor,
            "by_action": dict((a, [c, round(s, 2)]) for a, (c, s) in
                              sorted(by_action.items(), key=lambda kv: -kv[1][1])),
            "slowest": [[name, round(sec, 2)] for name, sec in slowest]}


def combine_profiles(profiles):
    """The profile of several plays of one run (detach + attach): counts summed; ``slowest`` and ``by_action`` of
    each kept in ``parts``."""
    profiles = [p for p in profiles if p]
    if not profiles:
        return None
    return {"tasks": sum(p["tasks"] for p in profiles), "task_s": round(sum(p["task_s"] for p in profiles), 2),
            "skipped": sum(p["skipped"] for p in profiles), "playbooks": sum(p["playbooks"] for p in profiles),
            "floor_tasks": dict((k, sum(p["floor_tasks"][k] for p in profiles)) for k in ("module", "control")),
            "parts": [{"by_action": p["by_action"], "slowest": p["slowest"]} for p in profiles]}
