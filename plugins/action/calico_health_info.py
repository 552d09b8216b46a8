# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for calico_ops.lifecycle.calico_health_info: a long wait (``wait: true``) in parts of at most ``PART``
seconds, each one module call that reads every check again inside (module_utils/k8s/wait.py), with one progress line
after each part - what is not there yet, in the cluster's words - instead of one retried task per poll."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

MODULE = "calico_ops.lifecycle.calico_health_info"
PART = 30  # seconds of a wait per module call: a progress line at least this often


def _verdict(result):
    """A failed module call is a gate that did not pass, its message the line (the caller may ignore the failure and
    read the verdict, as the fleet rollout's gate does)."""
    if result.get("failed"):
        result.setdefault("passed", False)
        result.setdefault("line", result.get("msg") or "calico_health_info failed")
    return result


class ActionModule(ActionBase):
    """Wait in parts, printing what is not healthy yet between them; the verdict is the last read's."""

    _VALID_ARGS = None

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        try:
            timeout = int(args.get("wait_timeout", 600)) if args.get("wait") else 0
            interval = int(args.get("poll_interval", 10))
        except (TypeError, ValueError):
            timeout, interval = 0, 0
        if timeout <= PART or interval < 1:
            # no wait, a short one, or bad options (the module names them): one module call
            result.update(_verdict(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)))
            return result
        start = time.monotonic()
        while True:
            left = max(0, timeout - int(time.monotonic() - start))
            last = _verdict(self._execute_module(module_name=MODULE, task_vars=task_vars,
                                                 module_args=dict(args, wait_timeout=min(PART, left))))
            waited = int(time.monotonic() - start)
            if last.get("passed") or last.get("failed") or waited + interval > timeout:
                last.update(waited=waited)  # healthy, a failure of its own (bad input), or the time is up
                return last
            display.display("health [%ss/%ss] %s" % (waited, timeout, last.get("line")))
            time.sleep(interval)
