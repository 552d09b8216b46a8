"""The process table from /proc: who is whose parent, and how much CPU each has used. ``fixtures.kill_tree`` finds
a playbook's whole tree with it (ansible-playbook's workers call setsid(), so a process group is not enough) and
``cpu_log`` the CPU of the processes under a pytest worker."""

from __future__ import annotations

import os

_TICK = os.sysconf("SC_CLK_TCK")


def table() -> dict:
    """pid -> (parent pid, CPU seconds used: user + system) of every process alive now."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
                found[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK)
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
    return found


def descendants(pid: int, procs: dict | None = None) -> list:
    """Every process under ``pid`` (children, their children, ...), from ``procs`` (``table()`` when not given)."""
    procs = table() if procs is None else procs
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        kids = [p for p, (parent, _cpu) in procs.items() if parent == current]
        found += kids
        frontier += kids
    return found
