# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for calico_ops.lifecycle.tigerastatus_info: the wait loop, with one progress line per poll."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.tigerastatus import failure_message

display = Display()


class ActionModule(ActionBase):
    """Poll the tigerastatus module until every component is ready, or fail on timeout."""

    _VALID_ARGS = None

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        if not args.get("wait"):
            result.update(self._execute_module(module_name="calico_ops.lifecycle.tigerastatus_info",
                                               module_args=args, task_vars=task_vars))
            return result
        try:
            timeout = int(args.get("wait_timeout", 600))
            interval = int(args.get("poll_interval", 10))
        except (TypeError, ValueError):
            return dict(failed=True, msg="wait_timeout and poll_interval must be integers")
        if timeout <= 0 or interval <= 0:
            return dict(failed=True, msg="wait_timeout and poll_interval must be positive (got %s and %s)"
                        % (timeout, interval))
        once = dict(args, wait=False)
        start = time.monotonic() if hasattr(time, "monotonic") else time.time()
        polls = 0
        last = {}
        fail_on = set(args.get("fail_on_reasons") or [])
        try:
            fail_after = int(args.get("fail_after", 60))
        except (TypeError, ValueError):
            return dict(failed=True, msg="fail_after must be an integer")
        stuck_since = {}  # component -> when it was first seen Degraded with a reason of fail_on
        while True:
            polls += 1
            last = self._execute_module(module_name="calico_ops.lifecycle.tigerastatus_info", module_args=once,
                                        task_vars=task_vars)
            if last.get("failed"):
                return last
            waited = int((time.monotonic() if hasattr(time, "monotonic") else time.time()) - start)
            summary = ", ".join(last.get("lines") or []) or (
                "no TigeraStatus yet" if last.get("installed") else "TigeraStatus not served yet")
            if last.get("missing"):
                summary += " (waiting for: %s)" % ", ".join(last["missing"])
            display.display("tigerastatus [%ss/%ss] %s" % (waited, timeout, summary))
            if last.get("ready"):
                last.update(changed=False, waited=waited, polls=polls)
                return last
            for c in last.get("components") or []:
                if c.get("state") == "Degraded" and c.get("reason") in fail_on:
                    stuck_since.setdefault(c["name"], waited)
                else:
                    stuck_since.pop(c.get("name"), None)
            stuck = [n for n, since in sorted(stuck_since.items()) if waited - since >= fail_after]
            if stuck:
                last.update(failed=True, changed=False, waited=waited, polls=polls,
                            msg=failure_message(last, waited).replace(
                                "TigeraStatus not Available after", "TigeraStatus Degraded (%s) for %ss, after"
                                % (", ".join(stuck), fail_after), 1))
                return last
            if waited + interval > timeout:
                last.update(failed=True, changed=False, waited=waited, polls=polls,
                            msg=failure_message(last, timeout))
                return last
            time.sleep(interval)
