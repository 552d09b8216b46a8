# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the ebpf_install role: the two v3.31 eBPF paths and the mixes the operator refuses."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import dataplane
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install import rollback as ebpf_rollback
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install import rules as ebpf_bootstrap
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install import settings as ebpf_settings
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install import summary as ebpf_summary


def ebpf_bootstrap_problems(facts):
    """``facts``: mode, installation, configmap, endpoint_slices, kube_proxy, version, variant,
    configmap_namespace, disable_kube_proxy (see module_utils/ebpf_bootstrap.problems)."""
    facts = dict(facts or {})
    return ebpf_bootstrap.problems(
        facts.get("mode"), facts.get("installation"), configmap=facts.get("configmap"),
        endpoint_slices=facts.get("endpoint_slices"), kube_proxy=facts.get("kube_proxy"),
        version=facts.get("version"), variant=facts.get("variant") or "Calico",
        configmap_namespace=facts.get("configmap_namespace") or "tigera-operator",
        disable_kube_proxy=facts.get("disable_kube_proxy", True))


def ebpf_install_settings_problems(variables, custom_resources_url=None):
    """The role's variables that contradict each other or are out of range (module_utils/ebpf_install/settings)."""
    return ebpf_settings.problems(variables, custom_resources_url)


def ebpf_install_steps(results, facts=None):
    """The summary's steps of this run from the step results (module_utils/ebpf_install/summary.steps)."""
    return ebpf_summary.steps(results, facts)


def ebpf_install_warnings(results):
    """The warnings the summary repeats, from the step results (module_utils/ebpf_install/summary.warnings)."""
    return ebpf_summary.warnings(results)


def ebpf_bootstrap_overrides(mode):
    return ebpf_bootstrap.installation_overrides(mode)


def ebpf_cluster_report(objects):
    """``objects``: installation, felix, calico_node, kube_proxy (each the object, or null); or objects_info's result
    for Installation default, FelixConfiguration default and the calico-node and kube-proxy DaemonSets, in that
    order of the DaemonSets (module_utils/ebpf_install/rules.report_objects)."""
    objects = dict(objects or {})
    if "objects" in objects:
        objects = ebpf_bootstrap.report_objects(objects["objects"])
    return ebpf_bootstrap.cluster_report(objects.get("installation"), objects.get("felix"),
                                         objects.get("calico_node"), objects.get("kube_proxy"))


def ebpf_enable_pending(installation, patch_spec, kube_proxy_running=False):
    """Whether enable_ebpf has anything left to change (module_utils/ebpf_install/rules.enable_pending)."""
    return ebpf_bootstrap.enable_pending(installation, patch_spec, kube_proxy_running)


def ebpf_operator_bpf_problem(felix, outcome):
    """Why the operator would refuse to change FelixConfiguration default's bpfEnabled, or ""
    (module_utils/calico/dataplane.operator_bpf_problem)."""
    return dataplane.operator_bpf_problem(felix, outcome)


def ebpf_rollback_settings_problems(variables):
    """The ebpf_rollback role's variables out of range (module_utils/ebpf_install/rollback.settings_problems)."""
    return ebpf_rollback.settings_problems(dict(variables or {}))


def ebpf_rollback_plan(reads, kube_proxy, settings, kops_rc=None):
    """What the ebpf_rollback role does (module_utils/ebpf_install/rollback.plan)."""
    return ebpf_rollback.plan(reads, kube_proxy, dict(settings or {}), kops_rc)


def ebpf_rollback_steps(results, facts):
    """The ebpf_rollback role's steps of this run (module_utils/ebpf_install/rollback.steps)."""
    return ebpf_rollback.steps(results, dict(facts or {}))


class FilterModule(object):
    def filters(self):
        return {
            "ebpf_cluster_report": ebpf_cluster_report,
            "ebpf_bootstrap_problems": ebpf_bootstrap_problems,
            "ebpf_enable_pending": ebpf_enable_pending,
            "ebpf_operator_bpf_problem": ebpf_operator_bpf_problem,
            "ebpf_bootstrap_overrides": ebpf_bootstrap_overrides,
            "ebpf_install_settings_problems": ebpf_install_settings_problems,
            "ebpf_install_steps": ebpf_install_steps,
            "ebpf_install_warnings": ebpf_install_warnings,
            "ebpf_rollback_plan": ebpf_rollback_plan,
            "ebpf_rollback_settings_problems": ebpf_rollback_settings_problems,
            "ebpf_rollback_steps": ebpf_rollback_steps,
        }
