# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A wait inside one module call: read again every ``interval`` seconds until ``done`` or ``timeout`` seconds.

One process and one connection for the whole wait, instead of one module process (and TLS handshake) per poll as
an Ansible ``until`` loop makes, and no ``FAILED - RETRYING`` line per poll. The modules' action plugins split a
long wait into parts and print a progress line after each (``plugins/action/calico_rollout_info.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time


def poll(read, done, timeout, interval, sleep=time.sleep, clock=time.monotonic):
    """``read()`` until ``done(result)`` or ``timeout`` seconds have passed (0: read once); returns
    ``(result, waited, polls)``. A read that would start after the timeout is not made."""
    started, polls = clock(), 0
    while True:
        result = read()
        polls += 1
        waited = clock() - started
        if done(result) or waited + interval > timeout:
            return result, round(waited, 1), polls
        sleep(interval)


def argument_spec():
    """The wait options every waiting module takes (documented by the fragment ``calico_ops.lifecycle.wait``)."""
    return dict(wait=dict(type="bool", default=False), wait_timeout=dict(type="int", default=600),
                poll_interval=dict(type="int", default=10))


def until(read, done, params, **clock):
    """``poll`` with a module's wait options: with ``wait`` until ``done`` or ``wait_timeout``, else one read;
    returns ``(result, waited)``."""
    result, waited, _polls = poll(read, done, params["wait_timeout"] if params["wait"] else 0,
                                  params["poll_interval"], **clock)
    return result, waited


def problems(timeout, interval, prefix=""):
    """Bad wait options, one line each naming the option."""
    out = []
    for name, value, low in (("wait_timeout", timeout, 0), ("poll_interval", interval, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            out.append("%s%s is %r: give whole seconds, at least %d" % (prefix, name, value, low))
    return out
