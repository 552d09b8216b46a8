# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A DaemonSet as the API returns it: the label selector of its pods, its status counts, and whether it has settled -
emptied (``disabled``: no pod scheduled or left, as a nodeSelector no node matches leaves it) or full (``enabled``:
every desired pod scheduled, updated and ready). kube-proxy's jobs, the rollout waits and the health gate after a job
read it (``read``: the DaemonSet and its pods, the one way they are read)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import count


_OPERATORS = {"In": "%s in (%s)", "NotIn": "%s notin (%s)"}


def pod_selector(ds):
    """The DaemonSet's ``spec.selector`` as a label selector string: its ``matchLabels`` (``k=v,k2=v2``) and its
    ``matchExpressions`` (``k in (a,b)``, ``k notin (a)``, ``k``, ``!k``), so a LIST finds exactly its pods."""
    sel = ((ds or {}).get("spec") or {}).get("selector") or {}
    labels = sel.get("matchLabels") or {}
    terms = ["%s=%s" % (k, labels[k]) for k in sorted(labels)]
    for e in sel.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op in _OPERATORS:
            terms.append(_OPERATORS[op] % (key, ",".join(values)))
        elif op == "Exists":
            terms.append(key)
        elif op == "DoesNotExist":
            terms.append("!" + key)
    return ",".join(terms)


def read(client, namespace, name, pods_without_it=None):
    """GET DaemonSet ``namespace/name`` and LIST its pods by its own selector (by the label selector
    ``pods_without_it`` when there is no DaemonSet, for pods run outside one); ``(the DaemonSet or None, its pods, the
    selector used)``."""
    ds = client.get("apps/v1", "daemonsets", name, namespace=namespace)
    selector = pod_selector(ds) if ds is not None else pods_without_it
    pods = client.list("v1", "pods", namespace=namespace, label_selector=selector) if selector else []
    return ds, pods, selector


def daemonset_status(ds):
    meta, status = (ds or {}).get("metadata") or {}, (ds or {}).get("status") or {}
    return {
        "desiredNumberScheduled": count(status.get("desiredNumberScheduled")),
        "currentNumberScheduled": count(status.get("currentNumberScheduled")),
        "updatedNumberScheduled": count(status.get("updatedNumberScheduled")),
        "numberReady": count(status.get("numberReady")),
        "numberAvailable": count(status.get("numberAvailable")),
        "numberUnavailable": count(status.get("numberUnavailable")),
        "numberMisscheduled": count(status.get("numberMisscheduled")),
        "generation": count(meta.get("generation")),
        "observedGeneration": count(status.get("observedGeneration")),
    }


def live_pods(pods):
    """Pods not being deleted."""
    return [p for p in pods or [] if not (p.get("metadata") or {}).get("deletionTimestamp")]


def progress(ds, pods, state):
    """``{settled, line, status, pods}``: disabled settles at 0 desired/current/ready and no pod left;
    enabled when every desired pod is scheduled, updated and ready (and the generation observed)."""
    if ds is None:
        return {"settled": True, "line": "no DaemonSet", "status": {}, "pods": len(pods or [])}
    st = daemonset_status(ds)
    observed = st["observedGeneration"] >= st["generation"]
    pod_count = len(pods or [])
    if state == "disabled":
        settled = (observed and st["desiredNumberScheduled"] == 0 and st["currentNumberScheduled"] == 0
                   and st["numberReady"] == 0 and st["numberMisscheduled"] == 0 and pod_count == 0)
    else:
        want = st["desiredNumberScheduled"]
        settled = (observed and st["currentNumberScheduled"] == want and st["updatedNumberScheduled"] == want
                   and st["numberReady"] == want and st["numberUnavailable"] == 0
                   and len(live_pods(pods)) >= want)
    meta = ds.get("metadata") or {}
    line = ("DaemonSet %s/%s: desired %d, current %d, updated %d, ready %d, available %d, unavailable %d, "
            "misscheduled %d, pods %d (generation %d, observed %d)"
            % (meta.get("namespace"), meta.get("name"), st["desiredNumberScheduled"],
               st["currentNumberScheduled"], st["updatedNumberScheduled"], st["numberReady"],
               st["numberAvailable"], st["numberUnavailable"], st["numberMisscheduled"], pod_count,
               st["generation"], st["observedGeneration"]))
    return {"settled": settled, "line": line, "status": st, "pods": pod_count}
