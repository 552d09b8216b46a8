# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the upgrade role: the guards and the variable checks (the rules live in module_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import version as calico_version
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.upgrade import settings as upgrade_settings


def calico_upgrade_plan(facts_result, target, record=None, minimum=calico_version.MINIMUM_SOURCE,
                        owner_references_before=calico_version.OWNER_REFERENCES_BEFORE):
    """A ``calico_facts`` result -> the upgrade plan (see ``calico_version.plan``)."""
    facts = (facts_result or {}).get("facts") or {}
    sources = (facts_result or {}).get("sources") or {}
    try:
        return calico_version.plan(facts.get("version"), target, record=record, variant=facts.get("variant"),
                                   minimum=minimum, owner_references_before=owner_references_before,
                                   current_source=sources.get("version", ""))
    except calico_version.VersionError as exc:
        raise AnsibleFilterError(str(exc))


def calico_version_problems(values):
    return calico_version.version_problems(values)


def calico_url_problems(values):
    return calico_version.url_problems(values)


def calico_target_problems(target, allow_untested=False, minimum=calico_version.MINIMUM_SOURCE,
                           newest_tested=calico_version.NEWEST_TESTED):
    return calico_version.target_problems(target, allow_untested=allow_untested, minimum=minimum,
                                          newest_tested=newest_tested)


def calico_upgrade_settings_problems(variables):
    """The upgrade role's variables that are out of range or contradict each other (module_utils/upgrade/settings)."""
    return upgrade_settings.problems(variables)


class FilterModule(object):
    def filters(self):
        return {
            "calico_upgrade_plan": calico_upgrade_plan,
            "calico_version_problems": calico_version_problems,
            "calico_url_problems": calico_url_problems,
            "calico_target_problems": calico_target_problems,
            "calico_upgrade_settings_problems": calico_upgrade_settings_problems,
        }
