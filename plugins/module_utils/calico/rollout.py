# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: tell whether a DaemonSet and some Deployments have rolled out (pure rules + a few reads).

A DaemonSet has rolled out when the controller saw its latest spec, every scheduled pod is updated and
available, and each of its pods (from the current template) is Running with its containers ready. With the
etcd datastore, a calico-node pod showing READY 1/2 is expected and accepted (at least one container ready,
at most one not). A Deployment has rolled out when it saw its latest spec, every replica is updated and
available, and its Available condition is True.

A pod that is not ready is quoted with why, in its own words: each container's waiting reason and message, the
reason and exit code of its last termination, its restarts, the Ready condition's message, and (``read`` with
``log_lines``) the telling line of its log - what a user would otherwise look for with kubectl describe and logs.
With ``env``, the DaemonSet has not rolled out until its template's ``container`` carries those values (after a
change the operator renders, such as the API server endpoint, the old template may still look rolled out).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import container as container_of
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import env_value
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError, api_path
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import condition
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import poll
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.daemonset import read as read_daemonset

# a log line that says why: the last such line of a stuck pod's log is quoted, else its last line
_TELLING = re.compile(r"error|fail|fatal|unable|cannot|can't|refused|timed? ?out|no such host|lookup|denied|panic",
                      re.I)
LOG_PODS = 3  # the stuck pods whose log is read, at most, per poll


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


def _container_reasons(statuses):
    """Why containers are not ready, in the kubelet's words: waiting or terminated reason and message, the last
    termination's reason and exit code, the restarts."""
    out = []
    for c in statuses:
        if c.get("ready"):
            continue
        state, last = c.get("state") or {}, (c.get("lastState") or {}).get("terminated") or {}
        words = []
        for kind in ("waiting", "terminated"):
            if state.get(kind):
                words.append("%s %s%s" % (kind, state[kind].get("reason") or "",
                                          (": %s" % state[kind]["message"]) if state[kind].get("message") else ""))
        if last:
            words.append("last exit %s (code %s)" % (last.get("reason") or "", last.get("exitCode")))
        if c.get("restartCount"):
            words.append("%d restarts" % c["restartCount"])
        if words:
            out.append("%s %s" % (c.get("name"), ", ".join(w.strip() for w in words)))
    return out


def pod_reasons(pod, log_line=None):
    """Why a pod is not ready: ``[reason, ...]`` (containers, init containers, the Ready condition, the log)."""
    status = _status(pod)
    out = _container_reasons((status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []))
    ready = condition(pod, "Ready")
    if ready.get("status") == "False" and ready.get("message"):
        out.append("Ready=False: %s" % ready["message"])
    if log_line:
        out.append("last log line: %s" % log_line)
    return out


def pod_state(pod, datastore="kubernetes", log_line=None):
    """``(ok, text)`` for one pod: Running, not terminating, enough containers ready; when not, why (``pod_reasons``;
    ``log_line``: the telling line of its log)."""
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
        return False, text + (" (%s)" % ", ".join(waiting) if waiting else "") + _why(pod, log_line)
    if ready < required_ready(total, datastore):
        unready = [c.get("name") for c in statuses if not c.get("ready")]
        return False, text + " (not ready: %s)" % ", ".join(unready or ["no container status"]) + _why(pod, log_line)
    return True, text


def _why(pod, log_line):
    node = (pod.get("spec") or {}).get("nodeName")
    reasons = pod_reasons(pod, log_line)
    return "%s%s" % ((" on %s" % node) if node else "", (" - %s" % "; ".join(reasons)) if reasons else "")


def telling_line(text, limit=300):
    """The line of a log that says why: the last one with an error word, else the last line; None for no text."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return None
    telling = [line for line in lines if _TELLING.search(line)]
    line = (telling or lines)[-1]
    return line if len(line) <= limit else line[:limit - 3] + "..."


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


def current_pods(ds, pods):
    """The DaemonSet's own pods (by controller reference) split into ``(current, stale)`` as its controller counts
    them updated (Kubernetes' ``IsPodUpdated``): the pod's ``pod-template-generation`` is the DaemonSet's generation,
    or its ``controller-revision-hash`` is the current revision's. A template changed back to an earlier one (a
    change undone before its rollout ended) gets a new generation but the earlier revision's hash, and the pods still
    on that revision are up to date: the controller replaces none of them, so none carries the new generation. The
    current hash is read from a pod of the current generation; when there is none, the controller's own count
    decides (every pod current once it has seen the generation and counts every scheduled pod updated)."""
    generation = str(_meta(ds).get("generation") or 0)
    uid = _meta(ds).get("uid")
    own = [p for p in pods or [] if not uid or any(
        r.get("uid") == uid and r.get("controller") for r in _meta(p).get("ownerReferences") or [])]

    def label(pod, key, default=None):
        return (_meta(pod).get("labels") or {}).get(key, default)
    by_generation = [p for p in own if str(label(p, "pod-template-generation", generation)) == generation]
    hashes = set(label(p, "controller-revision-hash") for p in by_generation) - set([None])
    current = [p for p in own if p in by_generation or label(p, "controller-revision-hash") in hashes]
    status = _status(ds)
    if not by_generation and str(status.get("observedGeneration")) == generation and own and (
            status.get("updatedNumberScheduled") == status.get("desiredNumberScheduled") == len(own)):
        current = own
    return current, [p for p in own if p not in current]


def template_problem(ds, container, env):
    """The values of ``env`` the template's ``container`` does not carry yet (None when it carries them all)."""
    if not env:
        return None
    cont = container_of(ds, container)
    have = dict((k, env_value(cont, k)[0]) for k in sorted(env))
    wrong = ["%s=%s (it has %s)" % (k, env[k], have[k] if have[k] is not None else "none")
             for k in sorted(env) if have[k] != "%s" % env[k]]
    if not wrong:
        return None
    return "the template's container %s does not carry %s yet: the change is not rendered into it" % (
        container, ", ".join(wrong))


def felix_problem(felix, ds, container):
    """None when the operator has switched Felix to eBPF: FelixConfiguration ``default`` has ``spec.bpfEnabled``
    true (operators v1.36 and later), or the template's ``container`` carries ``FELIX_BPFENABLED=true`` (before);
    else what it shows instead."""
    enabled = ((felix or {}).get("spec") or {}).get("bpfEnabled")
    if "%s" % enabled in ("True", "true"):
        return None
    value = env_value(container_of(ds, container), "FELIX_BPFENABLED")[0]
    if ("%s" % value).lower() == "true":
        return None
    return ("Felix not switched to eBPF yet: FelixConfiguration default has %s, and container %s carries %s" % (
        "spec.bpfEnabled %s" % enabled if enabled is not None else ("no spec.bpfEnabled" if felix else "not been created"),
        container, "FELIX_BPFENABLED=%s" % value if value is not None else "no FELIX_BPFENABLED"))


def daemonset_state(ds, pods=(), datastore="kubernetes", logs=None, container=None, env=None):
    """``(done, line, problems)`` for a DaemonSet and its pods; ``logs``: ``{pod name: telling log line}``;
    ``env``: values its template's ``container`` must carry (``template_problem``)."""
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
    rendered = template_problem(ds, container, env)
    if rendered:
        problems.append(rendered)
    if updated != desired:
        problems.append("%d of %d pods updated" % (updated, desired))
    if available != desired or unavailable:
        problems.append("%d of %d pods available" % (available, desired))
    current, stale = current_pods(ds, pods)
    if stale:
        problems.append("%d pods from an older template: %s" % (len(stale), ", ".join(
            _meta(p).get("name") for p in stale[:5])))
    bad = [text for ok, text in (pod_state(p, datastore, (logs or {}).get(_meta(p).get("name")))
                                 for p in current) if not ok]
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


def judge(daemonset=None, pods=(), deployments=(), datastore="kubernetes", logs=None, container=None, env=None):
    """Everything at once: ``daemonset`` is ``((namespace, name), object or None)`` or None, ``deployments``
    a list of the same (``logs``, ``container``, ``env``: ``daemonset_state``'s). Returns
    ``{ready, lines, problems, message}``."""
    lines, problems = [], []
    items = []
    if daemonset is not None:
        items.append(("DaemonSet", daemonset))
    items.extend(("Deployment", d) for d in deployments or [])
    for kind, ((namespace, name), obj) in items:
        if obj is None:
            line, probs = "%s %s/%s: not found" % (kind, namespace, name), ["not found"]
        elif kind == "DaemonSet":
            _done, line, probs = daemonset_state(obj, pods, datastore, logs, container, env)
        else:
            _done, line, probs = deployment_state(obj)
        lines.append(line)
        problems.extend("%s %s/%s: %s" % (kind, namespace, name, p) for p in probs)
    return {"ready": not problems, "lines": lines, "problems": problems,
            "message": "; ".join(problems) if problems else "rolled out: " + "; ".join(lines)}


def stuck_logs(client, namespace, ds, pods, container, log_lines, datastore="kubernetes"):
    """``{pod name: telling line}`` of the log of ``container`` (else the pod's first) of the DaemonSet's current pods
    that are not ready, ``LOG_PODS`` at most; a log the API does not give (not started yet, not allowed) is left out."""
    out = {}
    if not log_lines or not ds:
        return out
    stuck = [p for p in current_pods(ds, pods)[0] if not pod_state(p, datastore)[0]
             and not _meta(p).get("deletionTimestamp")]
    for pod in stuck[:LOG_PODS]:
        names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        name = container if container in names else (names[0] if names else None)
        try:
            text = client.text(api_path("v1", "pods", namespace, _meta(pod).get("name"), subresource="log"),
                               query={"container": name, "tailLines": log_lines})
        except ClientError:
            continue
        line = telling_line(text)
        if line:
            out[_meta(pod).get("name")] = line
    return out


def read(client, namespace, daemonset=None, deployments=(), datastore="kubernetes", container=None, env=None,
         log_lines=0, absent_ok=False, felix_bpf=False):
    """GET the DaemonSet, LIST its pods (by its selector), GET each Deployment; judge. ``log_lines``: read that many
    lines of the log of the stuck pods and quote the telling one. ``absent_ok``: a DaemonSet that does not exist is
    nothing to wait for (``found`` false). ``felix_bpf``: also GET FelixConfiguration ``default``; not rolled out
    until the operator has switched Felix to eBPF (``felix_problem``)."""
    ds_item, pods, logs, ds = None, [], {}, None
    if daemonset:
        ds, pods, _selector = read_daemonset(client, namespace, daemonset)
        if ds is not None:
            logs = stuck_logs(client, namespace, ds, pods, container or daemonset, log_lines, datastore)
        elif absent_ok:
            line = "DaemonSet %s/%s: not found (nothing to wait for)" % (namespace, daemonset)
            return {"ready": True, "found": False, "lines": [line], "problems": [], "message": line}
        ds_item = ((namespace, daemonset), ds)
    deps = [((namespace, d), client.get("apps/v1", "deployments", d, namespace=namespace))
            for d in deployments or []]
    result = judge(ds_item, pods, deps, datastore, logs, container or daemonset, env)
    if felix_bpf and ds is not None:
        felix = client.get("crd.projectcalico.org/v1", "felixconfigurations", "default")
        problem = felix_problem(felix, ds, container or daemonset)
        if problem:
            result["problems"].append("DaemonSet %s/%s: %s" % (namespace, daemonset, problem))
            result.update(ready=False, message="; ".join(result["problems"]))
    result["found"] = ds is not None if daemonset else None
    return result


def watch(once, wait=False, wait_timeout=0, hold=0, poll_interval=10, log_lines=0, **clock):
    """``once(log_lines)`` read until rolled out (``wait``), or while it stays rolled out for ``hold`` seconds, or
    once; the result with ``waited`` and ``polls``. The pods' logs (``log_lines``) are read once, for the answer,
    after a read that is not rolled out - not on every poll - and a hold that broke stays broken even if that last
    read finds everything rolled out again. ``clock``: ``sleep`` and ``clock`` for ``k8s.wait.poll``."""
    if hold:  # stays rolled out: read until it is not, or the hold is over
        result, waited, polls = poll(lambda: once(0), lambda r: not r["ready"], hold, poll_interval, **clock)
    else:
        result, waited, polls = poll(lambda: once(0), lambda r: r["ready"], wait_timeout if wait else 0,
                                     poll_interval, **clock)
    if log_lines and not result["ready"]:
        detailed = once(log_lines)
        result = result if detailed["ready"] else detailed
    result.update(waited=waited, polls=polls)
    return result
