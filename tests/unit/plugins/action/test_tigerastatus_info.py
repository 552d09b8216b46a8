"""The tigerastatus_info action plugin's wait: a component Degraded with a reason of fail_on_reasons for fail_after
seconds ends the wait at once, quoting the operator; other states wait on to the timeout."""

from ansible.plugins.action import ActionBase

from ansible_collections.calico_ops.lifecycle.plugins.action import tigerastatus_info as plugin


class Task(object):
    def __init__(self, args):
        self.args = args


def status(state, reason="", message=""):
    comp = {"name": "calico", "state": state, "reason": reason, "message": message, "ready": state == "Available",
            "available": "False", "progressing": "False", "degraded": "True" if state == "Degraded" else "False"}
    return {"installed": True, "ready": state == "Available", "missing": [], "components": [comp],
            "lines": ["calico: %s" % state]}


def run(monkeypatch, answers, **args):
    clock = {"t": 0.0}
    monkeypatch.setattr(plugin.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(plugin.time, "sleep", lambda s: clock.__setitem__("t", clock["t"] + s))
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    action = object.__new__(plugin.ActionModule)
    action._task = Task(dict(wait=True, poll_interval=10, **args))
    polls = iter(answers)
    action._execute_module = lambda **kw: dict(next(polls))
    return action.run(task_vars={})


def test_a_migration_error_that_stays_ends_the_wait_after_fail_after(monkeypatch):
    stuck = status("Degraded", "MigrationError", "Error converting existing installation")
    out = run(monkeypatch, [stuck] * 20, wait_timeout=600, fail_on_reasons=["MigrationError"], fail_after=30)
    assert out["failed"] and out["polls"] == 4 and out["waited"] == 30
    assert out["msg"].startswith("TigeraStatus Degraded (calico) for 30s, after 30s:")
    assert "MigrationError: Error converting existing installation" in out["msg"]


def test_a_passing_degraded_state_or_another_reason_waits_on(monkeypatch):
    passing = [status("Degraded", "MigrationError")] * 2 + [status("Progressing")] + [status("Available")]
    out = run(monkeypatch, passing, wait_timeout=600, fail_on_reasons=["MigrationError"], fail_after=30)
    assert out.get("failed") is not True and out["ready"] and out["polls"] == 4
    other = run(monkeypatch, [status("Degraded", "ResourceNotReady")] * 10, wait_timeout=60,
                fail_on_reasons=["MigrationError"], fail_after=30)
    assert other["failed"] and other["msg"].startswith("TigeraStatus not Available after 60s")
