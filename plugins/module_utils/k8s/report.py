# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes layer: how much of a bulk job's per-object account its result lists one by one.

A bulk job (owner references, host endpoints) acts on thousands of objects. Each one is counted in the result's
``counts`` and kept, with its outcome, in the job's durable record (ConfigMaps and a file on the controller); the
result lists the first ``report_limit`` of each per-object list and says in ``not_listed`` how many it left out.
A result of every object is ~400 bytes an object that Ansible's controller decodes, copies and stores for each run
(2 MB at 5,000 objects: about a second of the run, measured) and that AWX keeps in every job event.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DEFAULT_REPORT_LIMIT = 100


def report_limit_spec():
    """The argument spec of the ``report_limit`` option (doc fragment calico_ops.lifecycle.report)."""
    return dict(type="int", default=DEFAULT_REPORT_LIMIT)


def report_limit_problem(value, name="report_limit"):
    """A message naming the option when ``value`` is not a usable limit (0 or more), else None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return ("%s is %r: give the most objects to list one by one in the result, 0 or more (default %d); every "
                "object is counted and kept in the record either way" % (name, value, DEFAULT_REPORT_LIMIT))
    return None


def listed(result, limit, **lists):
    """Put the first ``limit`` items of each of ``lists`` into ``result`` (of a dict: the first ``limit`` keys in
    sorted order) and how many each left out into ``result["not_listed"]`` (0 when none)."""
    not_listed = dict(result.get("not_listed") or {})
    for key, items in lists.items():
        if isinstance(items, dict):
            keys = sorted(items)
            kept = keys[:limit]
            result[key] = dict((k, items[k]) for k in kept)
        else:
            kept = list(items[:limit])
            result[key] = kept
        not_listed[key] = len(items) - len(kept)
    result["not_listed"] = not_listed
    return result
