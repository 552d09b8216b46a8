# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reads and dials of a connectivity check (``rules.py`` says what is deployed and dialled).

Four stages, each one module call (the role deploys and removes the workload in between, with the collection's
apply and kubernetes.core's delete):

* ``plan``: one LIST of nodes, kube-proxy's pods and the Services the checks need; the manifests of the workload;
  a node selector that matches nothing fails here, before anything is deployed;
* ``ready``: is every pod of the workload Running, Ready, with an address, and does every host pod answer through
  the API server and reach its node's client pod? With ``serving``, does each of the prober's targets answer one new
  connection? (asked again inside the call until it is, or ``wait_timeout``);
* ``check``: every dial of the checks asked for, ``workers`` at a time, each pair tried up to ``attempts`` times;
  ``expect: denied`` (a NetworkPolicy applied) passes a pair that does not answer, and keeps trying the pairs that
  still answer until ``timeout`` (Felix programs a policy within seconds);
* ``probe``: new connections every ``interval`` seconds to four targets until a stop file appears (the role starts
  it in the background before a job and stops it after), each attempt a line of a JSON-lines file (0600).

Every request is a GET: the module writes nothing to the cluster. The dials are agnhost's: a new TCP connection and
one HTTP GET each, 5 s at most.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import threading
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import dataplane
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.connectivity import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError, api_path
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import condition
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import in_order, workers_problem
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import poll
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import problems as wait_problems
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.location import check_file


class ConnectivityError(Exception):
    pass


def validate(params, prefix=""):
    bad = rules.problems(params, prefix)
    worker = workers_problem(params.get("workers"), prefix + "workers")
    if worker:
        bad.append(worker)
    bad += wait_problems(params.get("wait_timeout", 0), params.get("poll_interval", 5), prefix)
    # the role's variable is the directory of the prober's files (connectivity_probe_dir)
    out_name = prefix + ("probe_dir" if prefix else "probe_file")
    out = params.get("probe_file")
    if out:  # checked whenever given: the role gives it to the plan, before anything is deployed
        where = check_file(out, names={"path": out_name}, what="the prober's file")
        if where:
            bad.append(where)
    if params.get("stage") == "probe":
        if not out:
            bad.append("%s is not set: give the file the prober writes its attempts to" % out_name)
        if not params.get("stop_file"):
            bad.append("%sstop_file is not set: give the file whose existence stops the prober" % prefix)
    if bad:
        raise ConnectivityError("; ".join(bad) + "; nothing was deployed")


def _get(client, api_version, plural, name, namespace=None):
    try:
        return client.get(api_version, plural, name, namespace=namespace)
    except ClientError as exc:
        if exc.status == 404:  # the type is not served (no operator, no Calico CRDs)
            return None
        raise


def _bpf(client):
    """Is the data plane eBPF? The operator's Installation says so; a manifest install's FelixConfiguration."""
    return dataplane.is_bpf(dataplane.read(client))


def _kube_proxy_pods(client, namespace, selector):
    out = {}
    for pod in client.list("v1", "pods", namespace=namespace, label_selector=selector):
        node = (pod.get("spec") or {}).get("nodeName")
        if node and not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") in (
                "Pending", "Running", None):
            out.setdefault(node, []).append(pod["metadata"]["name"])
    return out


def plan(client, p, prefix="", facts=True):
    """Nodes, the workload's manifests and (``facts``) what the checks need to know of the cluster: the data plane,
    DNS and kube-proxy's pods - read by the plan and check stages, not by the ready poll nor the prober."""
    nodes = client.list("v1", "nodes")
    selected, skipped, problem = rules.select_nodes(nodes, p["node_selector"], p["max_nodes"], prefix)
    if problem:
        raise ConnectivityError(problem + "; nothing was deployed")
    ns = _get(client, "v1", "namespaces", p["namespace"])
    if ns is not None and (ns["metadata"].get("labels") or {}).get(rules.PART_OF) != rules.PART_OF_VALUE:
        raise ConnectivityError("%snamespace %s exists and is not the connectivity check's (no label %s=%s): "
                                "give a namespace of its own; nothing was deployed" % (
                                    prefix, p["namespace"], rules.PART_OF, rules.PART_OF_VALUE))
    pods = rules.layout(selected)
    out = {"nodes": [x["node"] for x in pods], "pods": pods, "skipped_nodes": skipped,
           "manifests": rules.manifests(p["namespace"], pods, p["image"], p["http_port"], p["host_port"],
                                        p["node_port"], service_port=p["service_port"]),
           "policy": rules.deny_policy(p["namespace"]), "leftover": ns is not None}
    if facts:
        dns_ns, dns_name = ((p["dns_service"] or "").split("/", 1) + [""])[:2]
        dns = bool(dns_name) and _get(client, "v1", "services", dns_name, namespace=dns_ns) is not None
        out.update(bpf=_bpf(client), dns=dns,
                   kube_proxy_pods=_kube_proxy_pods(client, p["kube_proxy_namespace"], p["kube_proxy_selector"]))
    return out


def _services(client, namespace):
    out = {}
    svc = _get(client, "v1", "services", "server", namespace=namespace)
    if svc:
        out["cluster_ip"] = svc["spec"].get("clusterIP")
    np = _get(client, "v1", "services", "server-nodeport", namespace=namespace)
    if np:
        out["node_port"] = (np["spec"].get("ports") or [{}])[0].get("nodePort")
    api = _get(client, "v1", "services", "kubernetes", namespace="default")
    if api:
        port = next((x.get("port") for x in api["spec"].get("ports") or [] if x.get("name") == "https"),
                    (api["spec"].get("ports") or [{}])[0].get("port"))
        out["api_server"] = [api["spec"].get("clusterIP"), port]
    return out


def _pod_state(pod):
    """None when Running and Ready with an address; else ``(kind, line)``: what keeps it (``rules.pod_problem``) and
    what the pod's status says, one line."""
    status = pod.get("status") or {}
    ready = condition(pod, "Ready")
    if status.get("phase") == "Running" and ready.get("status") == "True" and status.get("podIP"):
        return None
    waiting = [(c.get("state") or {}).get("waiting") or {} for c in status.get("containerStatuses") or []]
    scheduled = condition(pod, "PodScheduled")
    why = "; ".join("%s: %s" % (w.get("reason"), (w.get("message") or "")[:120]) for w in waiting if w)
    if scheduled.get("status") == "False":
        why = "; ".join(x for x in ("not scheduled: %s" % (scheduled.get("message") or scheduled.get("reason")), why)
                        if x)
    kind = rules.pod_problem([w.get("reason") for w in waiting if w], scheduled.get("status") == "False")
    return kind, "phase %s, Ready %s%s%s" % (status.get("phase"), ready.get("status", "unknown"),
                                             (" (%s)" % ready.get("message")) if ready.get("message") else "",
                                             ("; " + why) if why else "")


def _proxy(client, namespace, pod, port, query, path="dial"):
    """The body agnhost's ``/<path>`` on ``pod:port`` answers, asked through the API server's pod proxy."""
    return client.text(api_path("v1", "pods", namespace, "%s:%d" % (pod, port), subresource="proxy") + "/" + path,
                       query=query)


def _workload(client, namespace):
    pods = client.list("v1", "pods", namespace=namespace,
                       label_selector="%s=%s" % (rules.PART_OF, rules.PART_OF_VALUE))
    return {pod["metadata"]["name"]: pod for pod in pods}


def ready(client, p, layout, workers):
    """``{"ready", "waiting": [lines], "kinds": [what keeps each], "ips", "services"}``: every pod Running and Ready,
    every host pod answering through the API server and reaching its node's client pod."""
    found = _workload(client, p["namespace"])
    waiting, kinds, ips = [], [], {}
    for x in layout:
        for name in (x["server"], x["client"], x["host"]):
            pod = found.get(name)
            state = ("not created", "not created") if pod is None else _pod_state(pod)
            if state:
                kinds.append(state[0])
                waiting.append("pod %s/%s on %s: %s" % (p["namespace"], name, x["node"], state[1]))
            else:
                ips[name] = pod["status"]["podIP"]
    services = _services(client, p["namespace"])
    if not services.get("cluster_ip") or not services.get("node_port"):
        kinds.append("not created")
        waiting.append("Services server and server-nodeport in %s: %s" % (p["namespace"], services))
    if waiting:
        return {"ready": False, "waiting": waiting, "kinds": kinds, "ips": ips, "services": services}

    def hop(x):
        job = {"via": x["host"], "from": x["node"], "nested": True, "expect": x["client"]}
        try:
            body = _proxy(client, p["namespace"], x["host"], p["host_port"],
                          rules.dial_query(ips[x["client"]], p["http_port"]))
        except ClientError as exc:
            return rules.read_answer(job, error=exc)
        return rules.read_answer(dict(job, nested=False), body=body)

    for x, (answer, exc) in zip(layout, in_order(hop, layout, workers)):
        if exc is not None:
            raise exc
        if answer[0] != "ok":
            kinds.append("no answer")
            waiting.append("host pod %s on %s to client pod %s: %s" % (x["host"], x["node"], x["client"], answer[1]))
    if not waiting and p.get("serving"):
        _not_served(client, p, rules.probe_targets(layout, ips, services, p["http_port"]), workers, kinds, waiting)
    return {"ready": not waiting, "waiting": waiting, "kinds": kinds, "ips": ips, "services": services}


def _not_served(client, p, targets, workers, kinds, waiting):
    """With ``serving`` (before a job that changes the data plane): one new connection to each of the prober's
    targets; each that does not answer is a line of ``waiting`` (kind ``not served``). A network that already fails
    is then known before the job's first write, with the target and what the dial met."""
    for job, (answer, exc) in zip(targets, in_order(lambda j: _dial(client, p, j), targets, workers)):
        outcome, detail = ("failed", str(exc).splitlines()[0][:200]) if exc is not None else answer[:2]
        if outcome != "ok":
            kinds.append("not served")
            waiting.append("%s %s -> %s: %s" % (job["target"], job["from"], job["to"], detail))


def wait_ready(client, p, layout, sleep=time.sleep, clock=time.monotonic):
    """``ready()``, asked again every ``poll_interval`` seconds until the workload is ready or ``wait_timeout``
    seconds have passed (0: asked once); with ``waited``, the seconds it took, and ``reason``, one line."""
    state, waited, _polls = poll(lambda: ready(client, p, layout, p["workers"]), lambda s: s["ready"],
                                 p["wait_timeout"], p["poll_interval"], sleep=sleep, clock=clock)
    state.update(waited=waited, reason=rules.readiness_reason(state["kinds"], state["waiting"]))
    return state


def _timed_out(text):
    text = text.lower()
    return "timeout" in text or "timed out" in text or "deadline exceeded" in text


def _dial(client, p, job):
    """(outcome, detail, seconds) of one attempt of ``job``."""
    started = time.time()
    try:
        body = _proxy(client, p["namespace"], job["via"], p["host_port"], job["query"])
    except ClientError as exc:
        if exc.status in (500, 502, 503, 504) and _timed_out(str(exc)) and job["nested"]:
            # the host pod's hop timed out while its client pod waited on the target (agnhost: 5 s each)
            return "failed", "no answer within agnhost's 5 s", time.time() - started
        return rules.read_answer(job, error=exc) + (time.time() - started,)
    outcome, detail = rules.read_answer(job, body=body)
    if outcome == "unreached" and job["nested"] and _timed_out(detail):
        outcome, detail = "failed", "no answer within agnhost's 5 s (%s)" % detail
    return outcome, detail, time.time() - started


def _expectation(outcome, detail, expect):
    """A pair's outcome as the check sees it: with ``expect: denied``, not answering is what passes."""
    if expect != "denied" or outcome == "unreached":
        return outcome, detail
    if outcome == "failed" and not detail.startswith("answered "):
        return "ok", "denied (%s)" % detail
    return "failed", "answered while the NetworkPolicy %s was in place: not enforced" % rules.POLICY_NAME


def check(client, p, layout, ips, services, bpf, dns, kube_proxy_pods, expect="allowed"):
    """Run the checks: rows ``{"check", "from", "to", "outcome", "detail", "seconds"}``."""
    checks = list(p["checks"])
    policy_phase = expect in ("denied", "restored")
    if policy_phase:
        checks = ["pod_to_pod"]
    dns_name = ("server.%s.svc.%s" % (p["namespace"], p["cluster_domain"])) if dns else None
    api = tuple(services["api_server"]) if services.get("api_server") else None
    jobs = rules.plan(checks, layout, ips, services, p["http_port"], api_server=api, dns_name=dns_name)
    if not policy_phase:
        jobs = [j for j in jobs if j["check"] in checks]
    name = dict(zip(("denied", "restored"), rules.POLICY_ROWS)).get(expect)
    want = "denied" if expect == "denied" else "allowed"
    deadline = time.time() + (p["policy_timeout"] if policy_phase else 0)
    results = {}
    pending = list(range(len(jobs)))
    attempt = 0
    while pending:
        attempt += 1
        outcomes = in_order(lambda i: _dial(client, p, jobs[i]), pending, p["workers"])
        still = []
        for i, (res, exc) in zip(pending, outcomes):
            if exc is not None:
                raise exc
            outcome, detail = _expectation(res[0], res[1], want)
            results[i] = (outcome, detail, res[2])
            if outcome != "ok":
                still.append(i)
        pending = still
        if not pending or (attempt >= p["attempts"] and time.time() >= deadline):
            break
        time.sleep(1)
    rows = []
    for i, job in enumerate(jobs):
        outcome, detail, took = results[i]
        rows.append({"check": name or job["check"], "from": job["from"], "to": job["to"], "outcome": outcome,
                     "detail": detail, "seconds": round(took, 2)})
    if "kube_proxy_absent" in checks and not policy_phase:
        rows += rules.kube_proxy_rows(kube_proxy_pods, layout, bpf)
    if "dns" in checks and not dns and not policy_phase:
        rows += [{"check": "dns", "from": x["node"], "to": "-", "outcome": "skipped",
                  "detail": "no Service %s: the cluster has no DNS to check" % p["dns_service"]} for x in layout]
    return rows


def probe(client, p, layout, ips, services, stop_file, out_file, interval, max_seconds, workers):
    """New connections to each target every ``interval`` seconds until ``stop_file`` exists (or ``max_seconds``
    pass); one JSON line per attempt in ``out_file`` (0600). Returns the summary per target."""
    targets = rules.probe_targets(layout, ips, services, p["http_port"])
    lock = threading.Lock()
    records = []
    fd = os.open(out_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    handle = os.fdopen(fd, "w")
    sem = threading.Semaphore(max(workers, len(targets)))
    threads = []

    def attempt(job, at):
        try:
            outcome, detail, took = _dial(client, p, job)
        except Exception as exc:  # pylint: disable=broad-except
            # the API server itself did not answer: the attempt measured nothing of the path
            outcome, took = "unreached", time.time() - at
            detail = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        finally:
            sem.release()
        rec = {"t": round(at, 3), "target": job["target"], "outcome": outcome, "detail": detail,
               "ms": int(took * 1000)}
        with lock:
            records.append(rec)
            handle.write(json.dumps(rec, sort_keys=True) + "\n")
            handle.flush()

    started = time.time()
    slot = 0
    try:
        while not os.path.exists(stop_file) and time.time() - started < max_seconds:
            at = started + slot * interval
            for job in targets:
                if sem.acquire(False):  # an attempt that finds every worker busy is not made (it is not counted)
                    t = threading.Thread(target=attempt, args=(job, at))
                    t.daemon = True
                    t.start()
                    threads.append(t)
            threads = [t for t in threads if t.is_alive()]
            slot += 1
            time.sleep(max(0.0, started + slot * interval - time.time()))
        for t in threads:
            t.join(15)
    finally:
        with lock:
            handle.close()
    return {"seconds": round(time.time() - started, 1), "stopped_by": "stop file" if os.path.exists(stop_file)
            else "max_seconds", "targets": rules.summarize(records)}


def run_stage(client, p, prefix=""):
    """One stage of the module (``p``: its options); the result has ``lines`` to show and ``api_requests``."""
    validate(p, prefix)
    planned = plan(client, p, prefix, facts=p["stage"] in ("plan", "check"))
    layout = planned["pods"]
    out = {"changed": False, "nodes": planned["nodes"], "skipped_nodes": planned["skipped_nodes"]}
    stage = p["stage"]
    if stage == "plan":
        out.update(manifests=planned["manifests"], policy=planned["policy"], bpf=planned["bpf"],
                   dns=planned["dns"], leftover=planned["leftover"],
                   lines=["%d nodes to check: %s" % (len(layout), ", ".join(planned["nodes"]))]
                   + ["not checked: %s" % s for s in planned["skipped_nodes"]])
    else:
        state = wait_ready(client, p, layout) if stage == "ready" else ready(client, p, layout, p["workers"])
        if stage == "ready":
            out.update(ready=state["ready"], waiting=state["waiting"], reason=state["reason"], waited=state["waited"],
                       lines=["the probe workload is ready on %d nodes (after %ss)" % (len(layout), state["waited"])]
                       if state["ready"] else ["not ready after %ss: %s" % (state["waited"], state["reason"])]
                       + state["waiting"])
        elif not state["ready"]:
            raise ConnectivityError("the probe workload in %s is not ready: %s" % (
                p["namespace"], "; ".join(state["waiting"][:5])))
        elif stage == "check":
            rows = check(client, p, layout, state["ips"], state["services"], planned["bpf"], planned["dns"],
                         planned["kube_proxy_pods"], p["expect"])
            out.update(rows=rows, failures=rules.failures(rows), bpf=planned["bpf"], lines=rules.tables(rows))
        else:
            got = probe(client, p, layout, state["ips"], state["services"], p["stop_file"], p["probe_file"],
                        p["probe_interval"], p["probe_max_seconds"], p["workers"])
            out.update(got, probe_file=p["probe_file"],
                       lines=["prober: %ss, stopped by its %s" % (got["seconds"], got["stopped_by"])]
                       + rules.disruption_lines(got["targets"]))
    out["api_requests"] = dict(client.requests)
    return out
