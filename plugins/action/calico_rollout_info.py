# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for calico_ops.lifecycle.calico_rollout_info: a long wait (``wait: true``) or hold (``hold``) in
parts of at most ``PART`` seconds, each one module call that polls inside (module_utils/k8s/wait.py), with one
progress line after each part - the workloads' own status lines - instead of one module process and one retry line
per poll."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

MODULE = "calico_ops.lifecycle.calico_rollout_info"
PART = 30  # seconds of a wait per module call: a progress line at least this often


def _int(args, name, default):
    try:
        return int(args.get(name, default))
    except (TypeError, ValueError):
        return None


class ActionModule(ActionBase):
    """Wait in parts, printing the status between them; fail on the total timeout with the module's message."""

    _VALID_ARGS = None

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        hold = _int(args, "hold", 0)
        timeout = hold if hold else (_int(args, "wait_timeout", 600) if args.get("wait") else 0)
        interval = _int(args, "poll_interval", 10)
        if timeout is None or interval is None or timeout <= PART or interval < 1:
            # no wait, a short one, or bad options (the module names them): one module call
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
            return result
        start, polls, last = time.monotonic(), 0, {}
        while True:
            left = max(0, timeout - int(time.monotonic() - start))
            part = dict(args, hold=min(PART, left)) if hold else dict(args, wait=True, wait_timeout=min(PART, left))
            last = self._execute_module(module_name=MODULE, module_args=part, task_vars=task_vars)
            polls += int(last.get("polls") or 1)
            waited = int(time.monotonic() - start)
            # done: rolled out (a wait), no longer rolled out (a hold), or a failure of its own (bad input, the API)
            if (last.get("ready") != bool(hold)) or "lines" not in last or (hold and waited >= timeout):
                last.update(waited=waited, polls=polls)
                return last
            status = "; ".join(last.get("lines") or [])
            display.display("rollout %s[%ss/%ss] %s" % ("held " if hold else "", waited, timeout, status))
            if not hold and waited + interval > timeout:
                last.update(failed=True, changed=False, waited=waited, polls=polls,
                            msg="not rolled out: %s (waited %ss)" % (last.get("message"), waited))
                return last
            if not hold:
                time.sleep(interval)
