# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fields of Kubernetes objects as the API returns them: a status condition by type, a count that may be missing; and
a whole number from a field or a user's setting that may be text."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def condition(obj, ctype):
    """The condition of type ``ctype`` in ``obj``'s ``status.conditions`` (``{}`` when there is none)."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return {}


def count(value):
    """A status count as an int: a missing, empty or unreadable value is 0."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def whole(value):
    """``value`` as an int (``"30"`` too), or None when it is not a whole number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
