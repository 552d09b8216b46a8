"""The calico_health_info action plugin: a long wait in parts of PART seconds, one module call each (the module reads
every check again inside), a progress line between parts - what is not healthy yet - and the verdict of the last
read, never a failure of its own for an unhealthy cluster (the caller decides: the fleet rollout's gate)."""

from ansible_collections.calico_ops.lifecycle.plugins.action import calico_health_info as plugin

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.action_parts import run_action


def answer(passed):
    line = "healthy: TigeraStatus calico Available" if passed else "Installation default has linuxDataplane Iptables, not BPF"
    return {"passed": passed, "problems": [] if passed else [line], "line": line, "waited": 0}


def run(monkeypatch, answers, **args):
    return run_action(monkeypatch, plugin, answers, **args)


def test_a_long_wait_is_made_in_parts_with_a_progress_line_each(monkeypatch):
    out, calls, shown = run(monkeypatch, [answer(False), answer(False), answer(True)],
                            job="enable_ebpf", wait=True, wait_timeout=300, poll_interval=5)
    assert out["passed"] and out["waited"] == 100 and not out.get("failed")
    assert [c["wait_timeout"] for c in calls] == [30, 30, 30] and all(c["job"] == "enable_ebpf" for c in calls)
    assert shown == ["health [30s/300s] Installation default has linuxDataplane Iptables, not BPF",
                     "health [65s/300s] Installation default has linuxDataplane Iptables, not BPF"]


def test_the_timeout_returns_the_last_verdict_without_failing(monkeypatch):
    out, calls, shown = run(monkeypatch, [answer(False)] * 10, wait=True, wait_timeout=70, poll_interval=5)
    assert out["passed"] is False and not out.get("failed") and out["line"].startswith("Installation default")
    assert sum(c["wait_timeout"] for c in calls) <= 70 and out["waited"] <= 70


def test_no_wait_or_a_short_one_is_one_module_call(monkeypatch):
    out, calls, shown = run(monkeypatch, [answer(True)], job="upgrade")
    assert len(calls) == 1 and calls[0] == {"job": "upgrade"} and shown == [] and out["passed"]
    out, calls, shown = run(monkeypatch, [answer(False)], wait=True, wait_timeout=20, poll_interval=5)
    assert len(calls) == 1 and calls[0]["wait_timeout"] == 20 and out["passed"] is False


def test_a_failure_of_the_module_itself_ends_the_wait(monkeypatch):
    failure = {"failed": True, "msg": "wait_timeout is -1: give whole seconds, at least 0"}
    out, calls, shown = run(monkeypatch, [failure], wait=True, wait_timeout=300, poll_interval=5)
    assert out["failed"] and len(calls) == 1 and shown == []
    # a failure is a verdict too: not passed, its message the line (the fleet's gate reads it with failed_when false)
    assert out["passed"] is False and out["line"] == failure["msg"]
    out, calls, shown = run(monkeypatch, [dict(failure)], job="upgrade")
    assert out["failed"] and out["passed"] is False and out["line"] == failure["msg"]
