"""The calico_rollout_info action plugin: a long wait in parts of PART seconds, one module call each (the module
polls inside), a progress line between parts, and the total timeout's failure quoting the module's message."""

from ansible_collections.calico_ops.lifecycle.plugins.action import calico_rollout_info as plugin

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.action_parts import run_action


def answer(ready, polls=6):
    return {"ready": ready, "polls": polls, "lines": ["DaemonSet calico-system/calico-node: desired 2, updated 1"],
            "message": "DaemonSet calico-system/calico-node: 1 of 2 updated", "failed": not ready}


def run(monkeypatch, answers, **args):
    return run_action(monkeypatch, plugin, answers, **args)


def test_a_long_wait_is_made_in_parts_with_a_progress_line_each(monkeypatch):
    out, calls, shown = run(monkeypatch, [answer(False), answer(False), answer(True, polls=2)],
                            wait=True, wait_timeout=300, poll_interval=5)
    assert out["ready"] and out["polls"] == 14 and out.get("failed") is not True
    assert [c["wait_timeout"] for c in calls] == [30, 30, 30] and all(c["wait"] for c in calls)
    assert len(shown) == 2 and shown[0].startswith("rollout [30s/300s] DaemonSet calico-system/calico-node")


def test_the_total_timeout_fails_quoting_the_workloads(monkeypatch):
    out, calls, shown = run(monkeypatch, [answer(False)] * 10, wait=True, wait_timeout=70, poll_interval=5)
    assert out["failed"] and out["msg"].startswith("not rolled out: DaemonSet") and out["msg"].endswith("(waited 70s)")
    assert [c["wait_timeout"] for c in calls][:2] == [30, 30] and sum(c["wait_timeout"] for c in calls) <= 70


def test_no_wait_or_a_short_one_is_one_module_call(monkeypatch):
    out, calls, shown = run(monkeypatch, [answer(True)], namespace="kube-system", daemonset="calico-node")
    assert len(calls) == 1 and calls[0] == {"namespace": "kube-system", "daemonset": "calico-node"} and shown == []
    out, calls, shown = run(monkeypatch, [answer(False)], wait=True, wait_timeout=20, poll_interval=5)
    assert len(calls) == 1 and calls[0]["wait_timeout"] == 20 and out["failed"]


def test_a_failure_of_the_module_itself_ends_the_wait(monkeypatch):
    out, calls, shown = run(monkeypatch, [{"failed": True, "msg": "wait_timeout is -1: give whole seconds"}],
                            wait=True, wait_timeout=100, poll_interval=5)
    assert out["failed"] and len(calls) == 1 and shown == []


def test_a_long_hold_is_made_in_parts_and_ends_at_the_first_part_not_rolled_out(monkeypatch):
    held = dict(answer(True), failed=False)
    out, calls, shown = run(monkeypatch, [held, held, held, held], hold=100, poll_interval=5)
    assert out["ready"] and [c["hold"] for c in calls] == [30, 30, 30, 10] and len(shown) == 3
    assert shown[0].startswith("rollout held [30s/100s]")
    broke = dict(answer(False), msg="not rolled out: 1 of 2 updated (12s into a hold of 30s)")
    out, calls, shown = run(monkeypatch, [held, broke], hold=100, poll_interval=5)
    assert out["failed"] and len(calls) == 2 and out["msg"].endswith("into a hold of 30s)")
