"""Waits that do not alarm (issue 53, item 7): a wait is a module call that polls inside (and reports what it waited
for and how long), not an Ansible ``until`` loop, whose every retry prints ``FAILED - RETRYING`` - a successful run
would show the user lines that read as failures.

The loops left are named here, each with why it is still one; a new ``until`` in a role or playbook fails this test.
"""

import yaml
from task_tree import FILES, ROOT, entries

# (file, task name's start): why it still retries - none since the fleet's gate is one module (calico_health_info)
LEFT = {}


def _loops():
    for path in FILES:
        for task in entries(yaml.safe_load(path.read_text())):
            if "until" in task:
                yield path.relative_to(ROOT).as_posix(), " ".join(str(task.get("name") or "").split())


def test_no_task_waits_with_an_until_loop_but_those_named():
    found = list(_loops())
    unexpected = [(p, n) for p, n in found if not any(p == f and n.startswith(s) for f, s in LEFT)]
    assert unexpected == [], "a wait with until prints FAILED - RETRYING on every poll: make it a module call"
    # each one left is still there (an entry that no longer matches is removed from LEFT)
    stale = [(f, s) for f, s in LEFT if not any(p == f and n.startswith(s) for p, n in found)]
    assert stale == [], stale


def test_the_scan_finds_an_until_loop():
    task = yaml.safe_load("- name: a wait\n  ansible.builtin.command: 'true'\n  until: false\n  retries: 1\n")
    assert [t.get("until") for t in entries(task)] == [False]
