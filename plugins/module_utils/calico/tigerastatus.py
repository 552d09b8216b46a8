# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: read the operator's TigeraStatus objects and judge them (pure functions + one LIST)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import condition

API_VERSION = "operator.tigera.io/v1"
PLURAL = "tigerastatuses"


# The TigeraStatus each operator custom resource reports under (its conditions' observedGeneration is that resource's
# metadata.generation when the operator last reconciled it): the Installation's is "calico".
INSTALLATION_COMPONENT = "calico"


def observed_generation(obj):
    """The highest observedGeneration of a TigeraStatus' conditions; None when the operator reports none."""
    seen = [c.get("observedGeneration") for c in (obj.get("status") or {}).get("conditions") or []
            if isinstance(c.get("observedGeneration"), int) and c.get("observedGeneration") > 0]
    return max(seen) if seen else None


def summarize(obj, generation=None):
    """One component: its three conditions and a verdict (ready = Available, not Progressing/Degraded).

    ``generation``: the metadata.generation of the custom resource this component reports on. Conditions the
    operator wrote for an older generation describe the resource before the latest change (an Installation just
    switched to BPF still shows the Iptables install Available until the operator reconciles it): such a
    component is not ready, whatever its conditions say."""
    available = condition(obj, "Available")
    progressing = condition(obj, "Progressing")
    degraded = condition(obj, "Degraded")
    observed = observed_generation(obj)
    stale = generation is not None and observed is not None and observed < generation
    ready = (available.get("status") == "True" and progressing.get("status") != "True"
             and degraded.get("status") != "True" and not stale)
    if degraded.get("status") == "True":
        state, cond = "Degraded", degraded
    elif stale:
        state, cond = "Pending", {"reason": "NotYetObserved", "message": (
            "the operator has not reported on generation %d of its resource yet (its conditions are of "
            "generation %d)" % (generation, observed))}
    elif progressing.get("status") == "True":
        state, cond = "Progressing", progressing
    elif available.get("status") == "True":
        state, cond = "Available", available
    else:
        state, cond = "Unknown", available or progressing or degraded
    return {
        "name": obj["metadata"]["name"],
        "available": available.get("status", "Unknown"),
        "progressing": progressing.get("status", "Unknown"),
        "degraded": degraded.get("status", "Unknown"),
        "state": state,
        "reason": cond.get("reason", ""),
        "message": cond.get("message", ""),
        "ready": ready,
    }


def line(component):
    """``calico: Progressing (ResourceNotReady: DaemonSet "calico-system/calico-node" is not available)``"""
    detail = ""
    if component["state"] != "Available" and (component["reason"] or component["message"]):
        detail = " (%s)" % ": ".join(x for x in (component["reason"], component["message"]) if x)
    return "%s: %s%s" % (component["name"], component["state"], detail)


def judge(components, expected=()):
    """Whether every expected component exists and every component is ready; the missing names."""
    names = set(c["name"] for c in components)
    missing = sorted(set(expected) - names)
    ready = bool(components) and not missing and all(c["ready"] for c in components)
    return ready, missing


def read(client, expected=()):
    """One LIST of TigeraStatus (None when the CRD is not installed), and the Installation's generation: the
    ``calico`` component counts as ready only once the operator has reported on the Installation as it is now."""
    items = client.list_or_none(API_VERSION, PLURAL)
    if items is None:
        return {"installed": False, "components": [], "ready": False, "missing": sorted(expected),
                "lines": []}
    generation = None
    if any(i["metadata"]["name"] == INSTALLATION_COMPONENT for i in items):
        installation = client.get(API_VERSION, "installations", "default", metadata_only=True)
        generation = ((installation or {}).get("metadata") or {}).get("generation")
    components = sorted((summarize(i, generation if i["metadata"]["name"] == INSTALLATION_COMPONENT else None)
                         for i in items), key=lambda c: c["name"])
    ready, missing = judge(components, expected)
    return {"installed": True, "components": components, "ready": ready, "missing": missing,
            "lines": [line(c) for c in components]}


def failure_message(result, timeout):
    """What the play says on timeout: each component that is not ready, in the operator's own words."""
    if not result.get("installed"):
        return ("TigeraStatus is not served (the operator's CRDs are not installed) after %ss" % timeout)
    parts = ["%s: Available=%s Progressing=%s Degraded=%s%s" % (
        c["name"], c["available"], c["progressing"], c["degraded"],
        (" (%s: %s)" % (c["reason"], c["message"])) if (c["reason"] or c["message"]) else "")
        for c in result["components"] if not c["ready"]]
    if result.get("missing"):
        parts.append("not reported by the operator yet: %s" % ", ".join(result["missing"]))
    if not result["components"] and not result.get("missing"):
        parts.append("the operator has reported no TigeraStatus at all (is it running?)")
    return "TigeraStatus not Available after %ss: %s" % (timeout, "; ".join(parts))
