# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the fleet_rollout role: its plan, made in Python (module_utils/fleet/plan.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.fleet import plan as fleet_plan


def fleet_rollout_plan(settings):
    """The fleet rollout's plan from its variables and the group's hosts (module_utils/fleet/plan.plan)."""
    return fleet_plan.plan(dict(settings or {}))


class FilterModule(object):
    def filters(self):
        return {"fleet_rollout_plan": fleet_rollout_plan}
