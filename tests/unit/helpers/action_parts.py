"""Run one of the collection's waiting action plugins (calico_rollout_info, calico_health_info) without Ansible: a
fake clock that each module call advances by the seconds it was given to wait (or hold), the module's answers from
a list, and the progress lines the plugin displays."""

from ansible.plugins.action import ActionBase


class Task(object):
    def __init__(self, args):
        self.args = args


def run_action(monkeypatch, plugin, answers, **args):
    """``(result, module_args of each call, lines displayed)``."""
    clock = {"t": 0.0}
    monkeypatch.setattr(plugin.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(plugin.time, "sleep", lambda s: clock.__setitem__("t", clock["t"] + s))
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    shown, calls = [], []
    monkeypatch.setattr(plugin.display, "display", shown.append)
    action = object.__new__(plugin.ActionModule)
    action._task = Task(args)
    replies = iter(answers)

    def execute(**kw):
        calls.append(kw["module_args"])
        a = kw["module_args"]
        clock["t"] += a.get("hold") or (a.get("wait_timeout", 0) if a.get("wait") else 0)
        return dict(next(replies))
    action._execute_module = execute
    return action.run(task_vars={}), calls, shown
