# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: what the kube_proxy role does on this cluster, decided from what ``kube_proxy_info`` read (pure).

Calico's documentation, "Enable eBPF on an existing cluster", section "Configure kube-proxy": kube-proxy out of
Calico eBPF's way, the way the platform needs. ``plan(info, settings)`` answers, before any write:

- ``problems``: why the role must stop now, each naming the variable to change or the object that is missing
  (variables out of range, a platform the eBPF data plane does not support, calico-node reaching the API server
  through kube-proxy, IPVS without leave to switch it, no DaemonSet to enable, OpenShift's Network config or
  Calico's FelixConfiguration API missing, kube-proxy running on MKE);
- ``ipvs``: kube-proxy runs in IPVS mode and is switched to iptables first (the role's ``ipvs.yml``);
- ``writes``: the merge patches, in order (``api_version``, ``resource``, ``namespace``, ``name``, ``patch``,
  ``missing``, ``create``, ``label``): the DaemonSet's nodeSelector on kubeadm, generic and EKS, the Network
  operator config on OpenShift, FelixConfiguration ``default`` on AKS; none on kOps and MKE;
- ``wait``: the state the DaemonSet must settle in after them (``None``: nothing to wait for);
- ``kops``: the change is kOps's own cluster spec, made with its CLI (the role's ``kops.yml``);
- ``notes``: what the report says besides the result;
- ``serves``: whether kube-proxy may still serve Services, so that a job waits for Calico before it goes: its pods
  run, or the platform keeps it where the DaemonSet does not tell (OpenShift, kOps, MKE, AKS).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import whole

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import (
    KUBE_PROXY_DAEMONSET_PLATFORMS as DAEMONSET_PLATFORMS, SUPPORTED_PLATFORMS as SUPPORTED)

# platforms where calico-node's way to the API server does not matter: kube-proxy stays (AKS), or is not changed
# through the API (MKE)
KUBE_PROXY_STAYS = ("aks", "mke")
# the module's own option names where the role's variable is named otherwise (with the prefix in front)
ROLE_NAMES = {"wait_timeout": "timeout"}
EKS_ADDON = ("EKS: when kube-proxy is managed as an EKS add-on, updating the add-on with conflict resolution "
             "OVERWRITE puts the DaemonSet back as AWS ships it; run this role again after such an update.")


def variable(settings, option):
    """The name the user knows an option by: the role's variable (``prefix`` + its name there) or the option."""
    prefix = settings.get("prefix") or ""
    return prefix + ROLE_NAMES.get(option, option) if prefix else option


def settings_problems(s):
    """The settings that are out of range or contradict each other, each naming its variable."""
    def v(option):
        return variable(s, option)

    out = []
    if not s.get("configmaps"):
        out.append("%s is an empty list: name at least one ConfigMap kube-proxy's mode may be read from (default "
                   "kube-proxy, kube-proxy-config), or an IPVS mode would go unseen" % v("configmaps"))
    if not s.get("node_selector"):
        out.append("%s: must have at least one key (a label no node carries, for example non-calico: 'true')"
                   % v("node_selector"))
    timeout, interval = whole(s.get("wait_timeout")), whole(s.get("poll_interval"))
    if not (timeout and interval and timeout > 0 and 0 < interval <= timeout):
        out.append("%s (%s) and %s (%s) must be positive, the interval not longer than the timeout" % (
            v("wait_timeout"), s.get("wait_timeout"), v("poll_interval"), s.get("poll_interval")))
    if "kops_timeout" in s and (whole(s["kops_timeout"]) or 0) <= 0:
        out.append("%s: must be a positive number of seconds (got %s)" % (v("kops_timeout"), s["kops_timeout"]))
    if s.get("switch_ipvs_to_iptables") and s["state"] == "enabled":
        out.append("%s: true only applies with %s: disabled (the switch happens before kube-proxy is disabled); "
                   "unset it to enable kube-proxy" % (v("switch_ipvs_to_iptables"), v("state")))
    return out


def _calico_api_problem(info, s):
    api = info.get("calico_api") or {}
    if (s["state"] != "disabled" or not s.get("require_calico_api", True) or info["platform"]["name"] in
            KUBE_PROXY_STAYS or api.get("daemonset") is None or api.get("direct")):
        return []
    how = ("KUBERNETES_SERVICE_HOST %s" % api["host"]) if api.get("host") else \
        "no KUBERNETES_SERVICE_HOST/PORT in its environment"
    return ["kube-proxy: not disabled - DaemonSet %s reaches the API server through the `kubernetes` Service (%s), "
            "which kube-proxy serves; without it calico-node cannot start on a node that restarts. Create ConfigMap "
            "kubernetes-services-endpoint first (playbook services_endpoint, or enable_ebpf/install_ebpf, which do it "
            "in order), or set %s: false if calico-node reaches the API server another way. Nothing was written."
            % (api["daemonset"], how, variable(s, "require_calico_api"))]


def _platform_problems(info, s):
    """What stops the platform's own step before any write."""
    name, state = info["platform"]["name"], s["state"]
    ds, mode = info["daemonset"], info.get("mode") or {}
    where = "%s/%s" % (s["namespace"], s["daemonset"])
    out = []
    if name in DAEMONSET_PLATFORMS:
        if state == "disabled" and mode.get("ipvs") and info.get("running") and not s.get("switch_ipvs_to_iptables"):
            out.append("kube-proxy runs in IPVS mode (%s): it must be switched to iptables mode before it is "
                       "disabled. Set %s: true to let this role do it (it sets mode iptables, rolls the DaemonSet, "
                       "and then each node needs a restart to clear the IPVS rules), or switch it yourself and run "
                       "this role again." % (mode.get("source"), variable(s, "switch_ipvs_to_iptables")))
        if state == "enabled" and not ds["present"]:
            out.append("%s: enabled, but there is no DaemonSet %s: the cluster was made without kube-proxy (for "
                       "example kubeadm init --skip-phases=addon/kube-proxy). Install it first (kubeadm init phase "
                       "addon kube-proxy), then run this role again." % (variable(s, "state"), where))
    elif name == "openshift" and not info["openshift"]["exists"]:
        out.append("networks.operator.openshift.io '%s' was not found (%s): is this OpenShift? Set %s if not." % (
            s["openshift_name"], "no such object" if info["openshift"]["served"] else "the API is not served",
            variable(s, "platform")))
    elif name == "aks" and info["felix"]["api_version"] is None:
        out.append("AKS: FelixConfiguration is served neither through projectcalico.org/v3 nor "
                   "crd.projectcalico.org/v1: install Calico first, then run this role to set %s: false."
                   % s["felix_field"])
    elif name == "mke" and info["mke"]["failed"]:
        out.append(info["mke"]["message"])
    return out


def problems(info, s):
    """Every reason to stop before any write, in the order the user should read them."""
    name = info["platform"]["name"]
    if name not in SUPPORTED:
        detected = ((info["platform"].get("details") or {}).get("detected") or {}).get("evidence") or []
        return settings_problems(s) + [
            "%s: %s was detected (%s), and the eBPF data plane does not support it. Set %s if the detection is "
            "wrong." % (variable(s, "platform"), info["platform"].get("title", name), "; ".join(detected),
                        variable(s, "platform"))]
    return settings_problems(s) + _calico_api_problem(info, s) + _platform_problems(info, s)


def _daemonset_write(info, s):
    change = "add " if s["state"] == "disabled" else "remove "
    return {"api_version": "apps/v1", "resource": "daemonsets", "namespace": s["namespace"], "name": s["daemonset"],
            "patch": info["daemonset"]["patch"], "missing": "fail", "create": None,
            "label": "DaemonSet's nodeSelector - %s/%s: %s%s" % (
                s["namespace"], s["daemonset"], change, json.dumps(s["node_selector"], sort_keys=True))}


def _writes(info, s):
    name, state = info["platform"]["name"], s["state"]
    if name in DAEMONSET_PLATFORMS and info["daemonset"]["present"]:
        return [_daemonset_write(info, s)]
    if name == "openshift":
        return [{"api_version": info["openshift"]["api_version"], "resource": "networks", "namespace": None,
                 "name": s["openshift_name"], "patch": info["openshift"]["patch"], "missing": "fail", "create": None,
                 "label": "Network operator config - %s spec.%s=%s" % (
                     s["openshift_name"], s["openshift_field"], str(state == "enabled").lower())}]
    if name == "aks":
        felix = info["felix"]
        return [{"api_version": felix["api_version"], "resource": "felixconfigurations", "namespace": None,
                 "name": s["felix_name"], "patch": felix["patch"],
                 "missing": "create" if state == "disabled" else "skip", "create": felix["create"],
                 "label": "FelixConfiguration - %s (%s) %s%s" % (
                     s["felix_name"], felix["api_version"], s["felix_field"],
                     ": false" if state == "disabled" else " back to its default")}]
    return []


def _notes(info, s):
    name, state, ds = info["platform"]["name"], s["state"], info["daemonset"]
    if name in DAEMONSET_PLATFORMS and not ds["present"] and state == "disabled":
        return ["There is no DaemonSet %s/%s (for example kubeadm init --skip-phases=addon/kube-proxy): kube-proxy "
                "is already disabled, nothing to do." % (s["namespace"], s["daemonset"])]
    if name == "eks" and ds["present"]:
        return [EKS_ADDON]
    if name == "aks":
        return [info["felix"]["message"] if state == "disabled" else
                "AKS: %s is back to its default (true): Calico cleans up kube-proxy's iptables rules again."
                % s["felix_field"]]
    if name == "mke":
        return [info["mke"]["message"]]
    return []


def plan(info, settings):
    """What the role does, from ``kube_proxy_info``'s reading ``info`` and the role's ``settings`` (module options:
    ``state``, ``namespace``, ``daemonset``, ``configmaps``, ``node_selector``, ``wait_timeout``, ``poll_interval``,
    ``kops_timeout`` (when given), ``switch_ipvs_to_iptables``, ``require_calico_api``, ``openshift_name``,
    ``openshift_field``, ``felix_name``, ``felix_field``, ``prefix`` (the role's variable prefix))."""
    found = problems(info, settings)
    name, ds, mode = info["platform"]["name"], info["daemonset"], info.get("mode") or {}
    in_daemonset = name in DAEMONSET_PLATFORMS
    # IPVS now (switched with leave, refused without), or a switch of an earlier run whose roll was cut
    ipvs = bool(in_daemonset and settings["state"] == "disabled" and info.get("running")
                and (mode.get("ipvs") or mode.get("roll_pending")))
    return {
        "problems": found,
        "ipvs": ipvs and not found,
        "writes": [] if found else _writes(info, settings),
        "wait": settings["state"] if in_daemonset and ds["present"] and not found else None,
        "kops": name == "kops" and not found,
        "notes": _notes(info, settings),
        "serves": bool(info.get("running")) or not in_daemonset,
    }
