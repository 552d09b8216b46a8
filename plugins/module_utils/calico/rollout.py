# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: tell whether a DaemonSet and some Deployments have rolled out (pure rules + a few reads).

A DaemonSet has rolled out when the controller saw its latest spec, every scheduled pod is updated and
available, and each of its pods (from the current template) is Running with its containers ready. With the
etcd datastore, a calico-node pod showing READY 1/2 is expected and accepted (at least one container ready,
at most one not). A Deployment has rolled out when it saw its latest spec, every replica is updated and
available, and its Available condition is True.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import condition


def _status(obj):
    return (obj or {}).get("status") or {}


def _meta(obj):
    return (obj or {}).get("metadata") or {}


def _conditions(obj):
    return ["%s=%s%s" % (c.get("type"), c.get("status"),
                         " (%s: %s)" % (c.get("reason", ""), c.get("message", "")) if c.get("message") else "")
            for c in _status(obj).get("conditions") or []]


def required_ready(total, datastore="kubernetes"):
    """How many of a pod's ``total`` containers must be ready: all of them, except with the etcd datastore,
    where one may be not ready (calico-node READY 1/2 is expected) as long as one is."""
    if datastore == "etcd":
        return max(1, total - 1) if total else 0
    return total


def pod_state(pod, datastore="kubernetes"):
    """``(ok, text)`` for one pod: Running, not terminating, enough containers ready."""
    meta, status = _meta(pod), _status(pod)
    name = meta.get("name")
    statuses = status.get("containerStatuses") or []
    total = len(((pod.get("spec") or {}).get("containers")) or statuses)
    ready = sum(1 for c in statuses if c.get("ready"))
    text = "%s %s %d/%d" % (name, status.get("phase") or "Unknown", ready, total)
    if meta.get("deletionTimestamp"):
        return False, text + " (terminating)"
    if status.get("phase") != "Running":
        waiting = ["%s: %s" % (c.get("name"), ((c.get("state") or {}).get("waiting") or {}).get("reason"))
                   for c in statuses if (c.get("state") or {}).get("waiting")]
        return False, text + (" (%s)" % ", ".join(waiting) if waiting else "")
    if ready < required_ready(total, datastore):
        unready = [c.get("name") for c in statuses if not c.get("ready")]
        return False, text + " (not ready: %s)" % ", ".join(unready or ["no container status"])
    return True, text


def _generation(kind, obj):
    """``(ref, status, generation, observed, problems)`` of a workload: its name, its status, the generation asked
    for and the one its controller has seen, and the problem when that one is behind."""
    meta, status = _meta(obj), _status(obj)
    ref = "%s %s/%s" % (kind, meta.get("namespace"), meta.get("name"))
    generation = meta.get("generation") or 0
    observed = status.get("observedGeneration") or 0
    problems = []
    if observed < generation:
        problems.append("the controller has not seen generation %d yet (observed %d)" % (generation, observed))
    return ref, status, generation, observed, problems


def daemonset_state(ds, pods=(), datastore="kubernetes"):
    """``(done, line, problems)`` for a DaemonSet and its pods."""
    ref, status, generation, observed, problems = _generation("DaemonSet", ds)
    if not ds:
        return False, "%s: not found" % ref, ["not found"]
    desired = status.get("desiredNumberScheduled") or 0
    updated = status.get("updatedNumberScheduled") or 0
    available = status.get("numberAvailable") or 0
    ready = status.get("numberReady") or 0
    unavailable = status.get("numberUnavailable") or 0
    line = ("%s: desired %d, updated %d, ready %d, available %d, unavailable %d, observed generation %d/%d"
            % (ref, desired, updated, ready, available, unavailable, observed, generation))
    if updated != desired:
        problems.append("%d of %d pods updated" % (updated, desired))
    if available != desired or unavailable:
        problems.append("%d of %d pods available" % (available, desired))
    uid = _meta(ds).get("uid")
    own = [p for p in pods or [] if not uid or any(
        r.get("uid") == uid and r.get("controller") for r in _meta(p).get("ownerReferences") or [])]
    current = [p for p in own if str((_meta(p).get("labels") or {}).get("pod-template-generation", generation))
               == str(generation)]
    stale = [p for p in own if p not in current]
    if stale:
        problems.append("%d pods from an older template: %s" % (len(stale), ", ".join(
            _meta(p).get("name") for p in stale[:5])))
    bad = [text for ok, text in (pod_state(p, datastore) for p in current) if not ok]
    if bad:
        problems.append("pods not ready: %s" % "; ".join(bad[:10]))
    if len(current) < desired:
        problems.append("%d of %d pods exist" % (len(current), desired))
    conds = _conditions(ds)
    if problems and conds:
        problems.append("conditions: %s" % "; ".join(conds))
    return not problems, line, problems


def deployment_state(dep):
    """``(done, line, problems)`` for a Deployment."""
    ref, status, generation, observed, problems = _generation("Deployment", dep)
    if not dep:
        return False, "%s: not found" % ref, ["not found"]
    replicas = ((dep.get("spec") or {}).get("replicas"))
    replicas = 1 if replicas is None else replicas
    updated = status.get("updatedReplicas") or 0
    available = status.get("availableReplicas") or 0
    total = status.get("replicas") or 0
    line = "%s: replicas %d, updated %d, available %d, total %d, observed generation %d/%d" % (
        ref, replicas, updated, available, total, observed, generation)
    if updated != replicas:
        problems.append("%d of %d replicas updated" % (updated, replicas))
    if available != replicas or total != replicas:
        problems.append("%d of %d replicas available (%d in total)" % (available, replicas, total))
    if replicas and condition(dep, "Available").get("status") != "True":
        problems.append("condition Available is not True")
    if problems:
        problems.append("conditions: %s" % ("; ".join(_conditions(dep)) or "none reported"))
    return not problems, line, problems


def judge(daemonset=None, pods=(), deployments=(), datastore="kubernetes"):
    """Everything at once: ``daemonset`` is ``((namespace, name), object or None)`` or None, ``deployments``
    a list of the same. Returns ``{ready, lines, problems, message}``."""
    lines, problems = [], []
    items = []
    if daemonset is not None:
        items.append(("DaemonSet", daemonset))
    items.extend(("Deployment", d) for d in deployments or [])
    for kind, ((namespace, name), obj) in items:
        if obj is None:
            line, probs = "%s %s/%s: not found" % (kind, namespace, name), ["not found"]
        elif kind == "DaemonSet":
            _done, line, probs = daemonset_state(obj, pods, datastore)
        else:
            _done, line, probs = deployment_state(obj)
        lines.append(line)
        problems.extend("%s %s/%s: %s" % (kind, namespace, name, p) for p in probs)
    return {"ready": not problems, "lines": lines, "problems": problems,
            "message": "; ".join(problems) if problems else "rolled out: " + "; ".join(lines)}


def read(client, namespace, daemonset=None, deployments=(), datastore="kubernetes"):
    """GET the DaemonSet, LIST its pods (by its selector), GET each Deployment; judge."""
    ds_item, pods = None, []
    if daemonset:
        ds = client.get("apps/v1", "daemonsets", daemonset, namespace=namespace)
        if ds is not None:
            labels = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            selector = ",".join("%s=%s" % kv for kv in sorted(labels.items())) or None
            pods = client.list("v1", "pods", namespace=namespace, label_selector=selector)
        ds_item = ((namespace, daemonset), ds)
    deps = [((namespace, d), client.get("apps/v1", "deployments", d, namespace=namespace))
            for d in deployments or []]
    return judge(ds_item, pods, deps, datastore)
