# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: what the ebpf_install role did, step by step, from the results its steps registered (pure).

``steps(results, facts)`` turns the step results of one run into the summary's list of ``{step, changed}``, in the
order the job takes them: the endpoint ConfigMap, the Enterprise pull secret and license, the operator's CRDs and
manifest, the Installation patch (enable_ebpf), the custom resources (install_ebpf), the wait before kube-proxy goes,
kube-proxy. A step whose result is missing, empty or skipped did not run in this run and is left out: the role forgets
the results of an earlier run at its start, so nothing of another run shows here. A sub-role's step (the endpoint,
kube-proxy) counts when its ``include_role`` ran: the result the sub-role publishes may be an earlier run's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def ran(result):
    """Whether a registered step result says the step ran in this run (not missing, empty or skipped)."""
    return isinstance(result, dict) and bool(result) and not result.get("skipped")


def _changed(result):
    return bool(result.get("changed"))


def _endpoint(r, facts):
    r = r.get("result") or {}
    return [{"step": "ConfigMap kubernetes-services-endpoint (%s:%s)" % (r.get("host"), r.get("port")),
             "changed": _changed(r)}]


def _enterprise(r, facts):
    return [{"step": "pull secret %s" % facts.get("pull_secret_name"), "changed": _changed(r.get("pull_secret") or {})},
            {"step": "license", "changed": _changed(r.get("license") or {})}]


def _operator(r, facts):
    crds = r.get("crds") or {}
    return [{"step": "operator CRDs (%d CustomResourceDefinitions)" % len(crds.get("results") or []),
             "changed": _changed(crds)},
            {"step": "operator (tigera-operator.yaml)", "changed": _changed(r.get("operator") or {})}]


def _patch(r, facts):
    return [{"step": "Installation default: linuxDataplane BPF" + (", hostPorts null" if facts.get("old_release") else "")
             + (", bpfNetworkBootstrap and kubeProxyManagement Enabled" if facts.get("bootstrap") == "operator" else ""),
             "changed": _changed(r)}]


def _custom_resources(r, facts):
    kinds = [d.get("kind") for d in (r.get("documents") or []) if isinstance(d, dict)]
    return [{"step": "custom resources (%s)" % ", ".join(str(k) for k in kinds),
             "changed": _changed(r.get("apply") or {})}]


def _rollout(r, facts):
    if not r.get("serves"):
        return [{"step": "kube-proxy already out of the way: no wait before it", "changed": False}]
    hold, rollout = r.get("hold") or {}, r.get("rollout") or {}
    lines = hold.get("lines") if "lines" in hold else rollout.get("lines")
    return [{"step": "calico-node rolled out and ready on every node, Felix switched to eBPF and every pod still Ready "
                     "after %ss: %s" % (r.get("window"), "; ".join(lines or [])), "changed": False}]


def _kube_proxy(r, facts):
    r = r.get("result") or {}
    return [{"step": "kube-proxy %s (%s)" % (r.get("state"), r.get("platform")), "changed": bool(r.get("changed"))}]


# the job's order; each step's result is a registered result, or for a sub-role the result it published beside the
# registered result of its include_role (``ran``: skipped when the sub-role did not run)
STEPS = (("endpoint", _endpoint), ("enterprise", _enterprise), ("operator", _operator), ("patch", _patch),
         ("custom_resources", _custom_resources), ("rollout", _rollout), ("kube_proxy", _kube_proxy))
# the steps whose result is a group of results: they ran when the result they hinge on did
_HINGE = {"endpoint": "ran", "enterprise": "pull_secret", "operator": "operator", "custom_resources": "apply",
          "rollout": "ran", "kube_proxy": "ran"}


def steps(results, facts=None):
    """``results``: {step: result} (see ``STEPS``); ``facts``: ``old_release``, ``bootstrap``, ``pull_secret_name``.
    The summary's steps of this run, in the job's order."""
    results, facts, out = dict(results or {}), dict(facts or {}), []
    for name, describe in STEPS:
        result = results.get(name)
        if not ran(result):
            continue
        hinge = _HINGE.get(name)
        if hinge and not (ran(result.get(hinge)) or result.get(hinge) is True):
            continue
        out.extend(describe(result, facts))
    return out


def warnings(results):
    """What the summary repeats at its end: the endpoint's warning about a DNS name (Calico issue 10683), when the
    endpoint step ran in this run."""
    endpoint = dict(results or {}).get("endpoint") or {}
    if not (ran(endpoint) and ran(endpoint.get("ran"))):
        return []
    warning = (endpoint.get("result") or {}).get("dns_name_warning")
    return [warning] if warning else []
