# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: what the ebpf_rollback role (disable_ebpf) does on this cluster, decided before any write (pure).

Calico's documentation, "Enabling the eBPF data plane", its steps to reverse the process: kube-proxy back on its nodes
and ready first, then Installation ``default``'s ``linuxDataplane`` from BPF to Iptables. ``settings_problems`` checks
the variables before anything is read; ``plan(reads, kube_proxy, settings, kops_rc)`` answers from what the role read
(Installation ``default``, a manifest's calico-node DaemonSet, FelixConfiguration ``default``, and ``kube_proxy_info``
run with ``state: enabled``):

- ``problems``: why nothing may be written, each naming what to change (a manifest install, no Installation; on BPF,
  kube-proxy that cannot be brought back on the platform, a ``bpfEnabled`` the operator refuses to change);
- ``bpf``: the Installation is on BPF (``False``: nothing to roll back, ``note`` says so);
- ``coexist``: FelixConfiguration ``default``'s merge patch that keeps kube-proxy's iptables rules while kube-proxy and
  eBPF run side by side, the value before recorded in an annotation (``None``: nothing to write);
- ``take_kube_proxy_back``: the operator manages kube-proxy (``kubeProxyManagement: Enabled``) and is told to stop;
- ``node_selector``: the nodeSelector keys kube-proxy's DaemonSet loses (the role's and the operator's);
- ``kube_proxy_checked``: kube-proxy is a DaemonSet whose pods must be ready before the switch;
- ``switch``: the Installation's merge patch spec (``bpfNetworkBootstrap`` Disabled with it when it was Enabled: the
  operator refuses it on any other data plane).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.dataplane import operator_bpf_problem
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install.summary import ran
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import whole
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import (
    KUBE_PROXY_DAEMONSET_PLATFORMS, SUPPORTED_PLATFORMS as SUPPORTED)

# the names the role's vars/main.yml gives (tigera/operator v1.40.7, pkg/render/node.go and
# pkg/controller/installation/bpf.go; tasks/coexist.yml)
NAMES = {"operator_kube_proxy_key": "operator.tigera.io/disable-kube-proxy",
         "cleanup_field": "bpfKubeProxyIptablesCleanupEnabled",
         "cleanup_record": "calico-ops.io/kube-proxy-iptables-cleanup-before"}


def settings_problems(v):
    """The role's variables out of range or contradicting the rollback, each a sentence naming the variable."""
    out = []
    timeout, interval = whole(v.get("ebpf_rollback_timeout")), whole(v.get("ebpf_rollback_poll_interval"))
    if not (timeout and interval and timeout > 0 and 0 < interval <= timeout):
        out.append("ebpf_rollback_timeout (%s) and ebpf_rollback_poll_interval (%s) must be positive numbers of "
                   "seconds, the interval not longer than the timeout" % (
                       v.get("ebpf_rollback_timeout"), v.get("ebpf_rollback_poll_interval")))
    if not v.get("ebpf_rollback_kube_proxy_node_selector"):
        out.append("ebpf_rollback_kube_proxy_node_selector: must name the nodeSelector the install put on the "
                   "kube-proxy DaemonSet (default {'non-calico': 'true'}); got %s"
                   % json.dumps(v.get("ebpf_rollback_kube_proxy_node_selector")))
    network = (v.get("ebpf_rollback_installation_spec") or {}).get("calicoNetwork") or {}
    if (network.get("linuxDataplane") or "Iptables") != "Iptables":
        out.append("ebpf_rollback_installation_spec.calicoNetwork.linuxDataplane: must be Iptables (or unset), got %s"
                   % json.dumps(network.get("linuxDataplane")))
    return out


def _object(reads, kind):
    """The object of ``kind`` that ``objects_info`` found (None when it did not)."""
    for entry in (reads or {}).get("objects") or []:
        if entry.get("kind") == kind and entry.get("resources"):
            return entry["resources"][0]
    return None


def _cleanup(felix, names):
    """FelixConfiguration default's cleanup field as it is (``unset``, ``true``, ``false``) and the value recorded
    before an earlier run set it false (None: no record)."""
    spec = (felix or {}).get("spec") or {}
    value = spec.get(names["cleanup_field"])
    now = "unset" if value is None else str(bool(value)).lower()
    before = (((felix or {}).get("metadata") or {}).get("annotations") or {}).get(names["cleanup_record"])
    return now, before


def _coexist(felix, now, before, names):
    if not felix:
        return None
    if now == "false" and before is None:
        return None  # already kept, and nothing recorded to restore: the user's own false
    return {"metadata": {"annotations": {names["cleanup_record"]: before or now}},
            "spec": {names["cleanup_field"]: False}}


def _platform_problems(kube_proxy, s, kops_rc):
    """Why kube-proxy cannot be brought back on this platform, from kube_proxy_info's reading (``state: enabled``)
    and the ``kops version`` exit code."""
    platform = kube_proxy["platform"]
    name, ds, kops = platform["name"], kube_proxy.get("daemonset") or {}, kube_proxy.get("kops") or {}
    out = []
    if name not in SUPPORTED:
        out.append("the eBPF data plane and this collection do not support this platform; set ebpf_rollback_platform "
                   "if the detection is wrong.")
    if name in KUBE_PROXY_DAEMONSET_PLATFORMS and not ds.get("present"):
        out.append("there is no DaemonSet %s/%s (the cluster was made without kube-proxy): install it first (kubeadm: "
                   "kubeadm init phase addon kube-proxy), then run this again." % (ds.get("namespace"), ds.get("name")))
    if name == "openshift" and not (kube_proxy.get("openshift") or {}).get("exists"):
        out.append("networks.operator.openshift.io %s was not found: is this OpenShift? Set ebpf_rollback_platform if "
                   "not." % (s.get("openshift_name") or "cluster"))
    if name == "kops":
        if kops_rc != 0:
            out.append("the kops CLI (%s) was not found or failed, set kube_proxy_kops_binary."
                       % (s.get("kops_binary") or "kops"))
        if not kops.get("state_store"):
            out.append("kube_proxy_kops_state_store (or KOPS_STATE_STORE) is not set.")
        if not kops.get("cluster_name"):
            out.append("kube_proxy_kops_cluster_name is not set (the kubeconfig's server does not show it).")
    if name == "mke" and not s.get("mke_kube_proxy_restored") and not kube_proxy.get("running"):
        out.append("MKE runs kube-proxy as set by its install flag (--kube-proxy-mode=iptables brings it back), which "
                   "the Kubernetes API cannot change or show: reinstall or reconfigure MKE with it, check that "
                   "ucp-kube-proxy runs on every node, then set ebpf_rollback_mke_kube_proxy_restored: true.")
    if name == "aks" and (kube_proxy.get("felix") or {}).get("api_version") is None:
        out.append("AKS: FelixConfiguration is served neither through projectcalico.org/v3 nor crd.projectcalico.org/v1.")
    if not out:
        return []
    return ["kube-proxy cannot be restored on %s (%s), so the data plane is not switched (nothing was written): %s" % (
        platform.get("title") or name, platform.get("source") or "ebpf_rollback_platform", " ".join(out))]


def _felix_problems(felix):
    """The operator changes ``bpfEnabled`` only while its annotation agrees with the field."""
    problem = operator_bpf_problem(felix, "TigeraStatus calico would stay Degraded after the switch")
    return [problem] if problem else []


def _install_problems(reads):
    if _object(reads, "DaemonSet") is not None:
        return ["Calico runs from a manifest (DaemonSet kube-system/calico-node, no operator): disable_ebpf.yml rolls "
                "back operator installations only. For a manifest install set FelixConfiguration default bpfEnabled: "
                "false after kube-proxy is back (playbooks/kube_proxy.yml with kube_proxy_state=enabled)."]
    if _object(reads, "Installation") is None:
        return ["No Installation 'default' (operator.tigera.io/v1) in this cluster: there is no operator "
                "installation to take off the eBPF data plane."]
    return []


def _note(dataplane, kube_proxy):
    text = ("Installation default already uses linuxDataplane %s: nothing to roll back; the kube-proxy and switch "
            "steps are skipped." % dataplane)
    if kube_proxy["platform"]["name"] in KUBE_PROXY_DAEMONSET_PLATFORMS and not kube_proxy.get("running"):
        text += (" Note: kube-proxy is not running (%s): run playbooks/kube_proxy.yml with kube_proxy_state=enabled "
                 "to bring it back." % ((kube_proxy.get("daemonset") or {}).get("line") or "no DaemonSet"))
    return text


def plan(reads, kube_proxy, settings, kops_rc=None):
    """What the role does. ``reads``: objects_info's result for Installation default, a manifest's calico-node
    DaemonSet and FelixConfiguration default; ``kube_proxy``: kube_proxy_info's result (``state: enabled``);
    ``settings``: ``node_selector`` (the role's), ``installation_spec``, ``kops_binary``, ``mke_kube_proxy_restored``
    and the names of ``NAMES`` where they differ; ``kops_rc``: the exit code of ``kops version`` (kOps only)."""
    names = dict(NAMES, **dict((k, settings[k]) for k in NAMES if settings.get(k)))
    installation = _object(reads, "Installation")
    felix = _object(reads, "FelixConfiguration") or {}
    network = ((installation or {}).get("spec") or {}).get("calicoNetwork") or {}
    dataplane = network.get("linuxDataplane") or "Iptables"
    problems = _install_problems(reads)
    bpf = dataplane == "BPF" and not problems
    if bpf:
        problems += _platform_problems(kube_proxy, settings, kops_rc) + _felix_problems(felix)
    bootstrap = network.get("bpfNetworkBootstrap") or "Disabled"
    switch = {"calicoNetwork": dict({"linuxDataplane": "Iptables"},
                                    **({"bpfNetworkBootstrap": "Disabled"} if bootstrap == "Enabled" else {}))}
    now, before = _cleanup(felix, names)
    return {
        "problems": problems,
        "bpf": bpf,
        "dataplane": dataplane,
        "platform": kube_proxy["platform"]["name"],
        "note": "" if bpf or problems else _note(dataplane, kube_proxy),
        "coexist": _coexist(felix, now, before, names) if bpf else None,
        "cleanup": {"value": now, "before": before, "restore": before is not None},
        "take_kube_proxy_back": bpf and (network.get("kubeProxyManagement") or "Disabled") == "Enabled",
        "node_selector": dict(settings.get("node_selector") or {}, **{names["operator_kube_proxy_key"]: "true"}),
        "kube_proxy_checked": kube_proxy["platform"]["name"] in KUBE_PROXY_DAEMONSET_PLATFORMS,
        "switch": _merge(switch, settings.get("installation_spec") or {}),
        "bootstrap_disabled": bootstrap == "Enabled",
        "names": names,
    }


def _merge(base, override):
    """``base`` with ``override`` merged in recursively (Ansible's ``combine(recursive=true)``, as the role merged
    it before). Unlike ``calico/manifest.deep_merge`` a ``None`` is kept: sent in the merge patch, it removes the field
    from the Installation, as the user's override asks."""
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def steps(results, facts):
    """The summary's steps of this run, each ``{step, changed}``, from the results the role's steps registered
    (``coexist``, ``kube_proxy_management``, ``kube_proxy`` (``ran``: its include_role, ``result``: kube_proxy_result,
    ``ready``: the read after it), ``switch``, ``restore``, ``endpoint`` (``read``, ``removed``, ``restarted``)) and
    the plan ``facts`` (``cleanup``, ``bootstrap_disabled``, ``platform``). A step that did not run in this run is left
    out: the role forgets the results of an earlier run at its start."""
    r, field = results or {}, (facts.get("names") or NAMES)["cleanup_field"]
    cleanup = facts.get("cleanup") or {}
    out = []
    if ran(r.get("coexist")):
        out.append({"step": "FelixConfiguration default: %s false while kube-proxy comes back (was %s)" % (
            field, cleanup.get("before") or cleanup.get("value")), "changed": bool(r["coexist"].get("changed"))})
    if ran(r.get("kube_proxy_management")):
        out.append({"step": "Installation default: kubeProxyManagement Disabled (kube-proxy is ours again)",
                    "changed": bool(r["kube_proxy_management"].get("changed"))})
    kube_proxy = r.get("kube_proxy") or {}
    if ran(kube_proxy.get("ran")):
        result, ready = kube_proxy.get("result") or {}, kube_proxy.get("ready") or {}
        line = (ready.get("daemonset") or {}).get("line") if ran(ready) else None
        out.append({"step": "kube-proxy enabled (%s)%s" % (result.get("platform") or facts.get("platform"),
                                                           (": " + line) if line else ""),
                    "changed": bool(result.get("changed"))})
    if ran(r.get("switch")):
        out.append({"step": "Installation default: linuxDataplane Iptables"
                            + (", bpfNetworkBootstrap Disabled" if facts.get("bootstrap_disabled") else ""),
                    "changed": bool(r["switch"].get("changed"))})
    if ran(r.get("restore")):
        out.append({"step": "FelixConfiguration default: %s restored (calico-node rolled out, no Felix on eBPF)"
                            % field, "changed": bool(r["restore"].get("changed"))})
    endpoint = r.get("endpoint") or {}
    if ran(endpoint.get("read")):
        out.append({"step": "ConfigMap kubernetes-services-endpoint removed"
                            + (", operator restarted" if endpoint.get("restarted") else ""),
                    "changed": ran(endpoint.get("removed")) and bool(endpoint["removed"].get("changed"))})
    return out
