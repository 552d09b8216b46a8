"""localcp.cpu_log (make test's CPU, test by test) and localcp.procs (the /proc table it and kill_tree read)."""

import json
import os
import subprocess
import time

from localcp import cpu_log, procs


def test_descendants_are_the_whole_tree_under_a_process_and_nothing_else():
    # a shell with a child, which has one of its own
    proc = subprocess.Popen(["sh", "-c", "sh -c 'sleep 30; :' & sleep 30; :"])
    try:
        deadline = time.monotonic() + 10
        while len(procs.descendants(proc.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        table = procs.table()
        under = procs.descendants(proc.pid, table)
        assert len(under) == 3 and proc.pid not in under and os.getpid() not in under
        assert all(table[pid][0] in [proc.pid] + under for pid in under)
        assert all(table[pid][1] >= 0 for pid in under)
    finally:
        for pid in [proc.pid] + procs.descendants(proc.pid):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        proc.wait()


def test_off_without_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv(cpu_log.ENV, raising=False)
    cpu_log.playbook_record("play.yml", cpu_log.snapshot(), {"stats": {"localhost": {"ok": 1}}})
    assert list(tmp_path.iterdir()) == []


def test_a_playbook_run_is_recorded_with_its_task_counts(monkeypatch, tmp_path):
    log = tmp_path / "cpu.jsonl"
    monkeypatch.setenv(cpu_log.ENV, str(log))
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/integration/test_x.py::test_y (call)")
    before = cpu_log.snapshot()
    subprocess.run(["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"], check=True)
    cpu_log.playbook_record("play.yml", before, {"stats": {"a": {"ok": 3, "changed": 1}, "b": {"skipped": 2}}})
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["test"] == "tests/integration/test_x.py::test_y" and record["playbook"] == "play.yml"
    assert record["tasks"] == {"ok": 3, "changed": 1, "skipped": 2}
    assert record["waited"] > 0 and record["wall"] >= record["waited"] / 2


def test_the_summary_adds_up_by_file_and_counts_tasks_that_ran_or_were_skipped(tmp_path):
    def test(name, wall, waited, alive):
        return {"kind": "test", "test": name, "worker": "gw0", "wall": wall, "waited": waited, "alive": alive}

    records = [
        {"kind": "playbook", "test": "tests/a.py::t1", "worker": "gw0", "playbook": "p.yml", "wall": 5, "waited": 4,
         "tasks": {"ok": 10, "changed": 4, "failures": 1, "skipped": 5}},
        test("tests/a.py::t1", 10, 8, 0),
        # a control plane stopped at the end of t2: its CPU moves from alive to waited, the sum is what it used
        test("tests/a.py::t2", 20, 50, -40),
        test("tests/b.py::t3", 30, 25, 5),
    ]
    path = tmp_path / "cpu.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    lines = cpu_log.summary(str(path), top=2).splitlines()
    assert lines[1].split() == ["tests/b.py", "1", "30", "30", "0", "0", "0"]
    assert lines[2].split() == ["tests/a.py", "2", "30", "18", "1", "16", "4"]
    assert lines[3] == "all: 3 tests, 48 CPU s; 1 playbook runs, 4 CPU s"
    assert [line.split()[-1] for line in lines[-2:]] == ["tests/b.py::t3", "tests/a.py::t2"]


def test_helper_processes_are_counted_by_command_file_and_verb(monkeypatch, tmp_path):
    log = tmp_path / "cpu.jsonl"
    monkeypatch.setenv(cpu_log.ENV, str(log))
    for test, args in (("tests/a.py::t1", ("get", "pods", "-o", "json")), ("tests/a.py::t2", ("get", "nodes")),
                       ("tests/b.py::t3", ("delete", "ns", "x"))):
        monkeypatch.setenv("PYTEST_CURRENT_TEST", test + " (call)")
        cpu_log.command_record("kubectl", args)
    lines = cpu_log.summary(str(log)).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("helper processes the tests ran (3)"))
    assert [line.split() for line in lines[start + 1:]] == [
        ["2", "kubectl", "tests/a.py", "get"], ["1", "kubectl", "tests/b.py", "delete"]]
    # the helper runs are not tests: the file table counts none
    assert lines[0].startswith("file") and lines[1].startswith("all: 0 tests")
