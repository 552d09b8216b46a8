"""Ansible's own floor (issue 21): what ansible-playbook costs on this machine before any job work, and what a run's
playbooks and tasks cost at those rates.

``ansible_costs`` times, once per run and control plane, a play without tasks, ``FLOOR_TASKS`` tasks of a collection
module that does no work and as many controller tasks; ``ansible_floor`` prices a run's task profile (tasks.py) with
them: the part of ours' time no code of the collection can remove."""

import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

from benchmarks import WORK
from benchmarks.harness import played
from benchmarks.report import median

FLOOR_TASKS = 20
_COSTS = {}

PLAYS = {
    "empty": [],
    "module": [{"name": "no-op module task %d" % i, "calico_ops.lifecycle.objects_info": {"objects": []}}
               for i in range(FLOOR_TASKS)],
    "control": [{"name": "no-op controller task %d" % i, "ansible.builtin.debug": {"msg": "x"}}
                for i in range(FLOOR_TASKS)],
}


def _walls(ansible, repeat):
    """{kind: [seconds of each of ``repeat`` runs]} of the plays of ``PLAYS``, taken in turn."""
    work = Path(tempfile.mkdtemp(prefix="ansible-costs-", dir=str(WORK)))
    walls = dict((k, []) for k in PLAYS)
    for _rep in range(repeat):
        for kind, tasks in PLAYS.items():
            path = work / ("%s.yml" % kind)
            path.write_text(yaml.safe_dump([{"name": "Ansible's own cost: %s" % kind, "hosts": "localhost",
                                             "gather_facts": False, "tasks": tasks}], sort_keys=False))
            start = time.monotonic()
            res = ansible.playbook(str(path), timeout=600)
            walls[kind].append(time.monotonic() - start)
            played(res, "Ansible cost play %s" % kind, 3000, 2000)
    return walls


def ansible_costs(cluster, ansible, repeat=3):
    """What Ansible itself costs on this machine, now (medians of ``repeat``): ``startup_s`` - ansible-playbook of a
    play without tasks (localhost, no facts, the repository's ansible.cfg); ``module_task_s`` - one task of a
    module of this collection that does no work (objects_info with no objects: the module is built, sent, started,
    builds its client and returns; no request); ``control_task_s`` - one task run in the controller (debug).
    Measured once per process and control plane."""
    key = id(cluster.cp)
    if key not in _COSTS:
        walls = _walls(ansible, repeat)
        startup = median(walls["empty"])
        _COSTS[key] = {
            "startup_s": round(startup, 3),
            "module_task_s": round((median(walls["module"]) - startup) / FLOOR_TASKS, 3),
            "control_task_s": round((median(walls["control"]) - startup) / FLOOR_TASKS, 3),
            "repeat": repeat, "tasks_per_play": FLOOR_TASKS,
            "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "loadavg": os.getloadavg()}
    return _COSTS[key]


def ansible_floor(profile, costs):
    """Seconds Ansible itself needs for ``profile``'s plays and tasks: start-ups, module tasks and controller tasks
    at ``costs``' rates, with no job work in them."""
    floor = profile["floor_tasks"]
    return round(profile["playbooks"] * costs["startup_s"] + floor["module"] * costs["module_task_s"]
                 + floor["control"] * costs["control_task_s"], 2)
