# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a connectivity check deploys, which pairs it dials, and how an answer is read (pure; ``runner.py`` sends).

The probe workload is what Kubernetes' own e2e network tests deploy (``test/e2e/framework/network``): agnhost
``netexec`` pods, on every selected node three of them:

* ``server-<node>``: the target, in the pod network, behind a ClusterIP Service and a NodePort Service;
* ``client-<node>``: where the pod-network checks start from (a pod that no NetworkPolicy of the check selects);
* ``host-<node>``: in the node's host network, where the node's own checks start from and through which the others
  are asked: the API server proxies a request to it (``pods/<name>:<port>/proxy``), it asks the client pod of its
  own node (netexec ``/dial``), which dials the target and answers with what it got. The API server reaches a
  node's address wherever it reaches the kubelet; a pod's address it does not reach everywhere (EKS with Calico's
  CNI), so the pod-network checks go through the node.

Every attempt is a **new** TCP connection from the source to the target, one HTTP GET of ``/hostname``: the answer
names the pod that served it, so a Service answered by the wrong backend is seen too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import condition

try:
    from urllib.parse import urlencode
except ImportError:  # pragma: no cover - Python 2
    from urllib import urlencode

CHECKS = ("pod_to_pod", "pod_to_service", "pod_to_nodeport", "host_to_nodeport", "pod_to_api_server", "dns",
          "network_policy", "kube_proxy_absent")
# the rows of check network_policy: every pod pair with the role's NetworkPolicy in place, then after its removal
POLICY_ROWS = ("network_policy_denied", "network_policy_restored")
PAIR_CHECKS = ("pod_to_pod", "pod_to_nodeport", "host_to_nodeport") + POLICY_ROWS
PROBE_TARGETS = ("pod_to_pod", "pod_to_service", "pod_to_nodeport", "host_to_nodeport")
DEFAULT_IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53"
DEFAULT_NAMESPACE = "calico-ops-connectivity"
PART_OF = "app.kubernetes.io/part-of"
PART_OF_VALUE = "calico-ops-connectivity"
ROLE_LABEL = "connectivity.calico-ops.io/role"
NODE_LABEL = "connectivity.calico-ops.io/node"  # the pod's node (when its name is a valid label value)
POLICY_NAME = "calico-ops-connectivity-deny"
NODE_PORT_RANGE = (30000, 32767)  # kube-apiserver's default --service-node-port-range
HTTPS_ANSWER = "Client sent an HTTP request to an HTTPS server"  # Go's TLS server to a plain HTTP request
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def problems(params, prefix=""):
    """Bad input, one line each naming the option (``prefix``: the role's variables), before any request."""
    out = []
    p = params

    def name(option):
        return prefix + option

    unknown = [c for c in p.get("checks") or [] if c not in CHECKS]
    if unknown:
        out.append("%s names unknown checks %s: choose from %s" % (
            name("checks"), ", ".join(unknown), ", ".join(CHECKS)))
    if p.get("checks") is not None and not p.get("checks"):
        out.append("%s is empty: name at least one of %s" % (name("checks"), ", ".join(CHECKS)))
    ns = p.get("namespace") or ""
    if not _LABEL.match(ns) or len(ns) > 63:
        out.append("%s is %r: give a namespace name (lower-case letters, digits and '-', at most 63)" % (
            name("namespace"), ns))
    ports = ("http_port", "service_port", "host_port")
    for option in ports:
        value = p.get(option)
        if value is not None and not 1 <= value <= 65535:
            out.append("%s is %r: give a TCP port, 1 to 65535" % (name(option), value))
    for i, first in enumerate(ports):
        for second in ports[i + 1:]:
            if p.get(first) is not None and p.get(first) == p.get(second):
                out.append("%s and %s are both %s: give two ports" % (name(first), name(second), p[first]))
    node_port = p.get("node_port")
    if node_port and not NODE_PORT_RANGE[0] <= node_port <= NODE_PORT_RANGE[1]:
        out.append("%s is %r: give 0 (the API server picks one) or a port in %d-%d" % (
            name("node_port"), node_port, NODE_PORT_RANGE[0], NODE_PORT_RANGE[1]))
    for option, low in (("policy_timeout", 1), ("attempts", 1), ("probe_interval", 0.1), ("probe_max_seconds", 1),
                        ("max_nodes", 0)):
        value = p.get(option)
        if value is not None and (isinstance(value, bool) or value < low):
            out.append("%s is %r: give a number of at least %s" % (name(option), value, low))
    selector = p.get("node_selector")
    if selector is not None and not isinstance(selector, dict):
        out.append("%s is %r: give a dict of node label to value" % (name("node_selector"), selector))
    if not (p.get("image") or "").strip():
        out.append("%s is empty: give the agnhost image (default %s)" % (name("image"), DEFAULT_IMAGE))
    return out


def _ready(node):
    cond = condition(node, "Ready")
    if not cond:
        return False, "no Ready condition"
    return cond.get("status") == "True", cond.get("message") or cond.get("reason") or ""


def internal_ip(node):
    for addr in (node.get("status") or {}).get("addresses") or []:
        if addr.get("type") == "InternalIP":
            return addr.get("address")
    return None


def select_nodes(nodes, selector, max_nodes=0, prefix=""):
    """(selected, skipped lines, problem): the Ready Linux nodes with every label of ``selector``, sorted by name
    (the first ``max_nodes`` when above 0); a problem line naming the option when none is left."""
    selector = selector or {}
    matched = [n for n in nodes if all((n["metadata"].get("labels") or {}).get(k) == str(v)
                                       for k, v in selector.items())]
    selected, skipped = [], []
    for node in sorted(matched, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        ready, why = _ready(node)
        if not ready:
            skipped.append("%s: not Ready (%s)" % (name, why))
        elif not internal_ip(node):
            skipped.append("%s: no InternalIP address" % name)
        elif (node["metadata"].get("labels") or {}).get("kubernetes.io/os", "linux") != "linux":
            skipped.append("%s: not a Linux node" % name)
        else:
            selected.append(node)
    if max_nodes and len(selected) > max_nodes:
        skipped += ["%s: beyond %s (%d)" % (n["metadata"]["name"], prefix + "max_nodes", max_nodes)
                    for n in selected[max_nodes:]]
        selected = selected[:max_nodes]
    problem = None
    if not selected:
        problem = "%s %s matches no Ready Linux node (%d nodes, %d matched the labels%s)" % (
            prefix + "node_selector", json.dumps(selector, sort_keys=True), len(nodes), len(matched),
            ("; " + "; ".join(skipped)) if skipped else "")
    return selected, skipped, problem


def pod_name(role, node_name, index):
    """``<role>-<node>`` when that is a valid pod name of at most 63 characters, else ``<role>-<index>``."""
    name = "%s-%s" % (role, node_name.lower())
    if len(name) <= 63 and _LABEL.match(name.replace(".", "-")):
        return name
    return "%s-%d" % (role, index)


def layout(nodes):
    """``[{"node", "ip", "server", "client", "host"}]`` per selected node: the names of its three pods."""
    out = []
    for i, node in enumerate(nodes):
        name = node["metadata"]["name"]
        out.append({"node": name, "ip": internal_ip(node), "server": pod_name("server", name, i),
                    "client": pod_name("client", name, i), "host": pod_name("host", name, i)})
    return out


def _container(name, image, port):
    return {"name": name, "image": image, "args": ["netexec", "--http-port=%d" % port, "--udp-port=-1"],
            "ports": [{"containerPort": port, "protocol": "TCP"}],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": port}, "periodSeconds": 2}}


def _pod(namespace, name, node, role, image, port, host_network=False, service_port=None):
    labels = {PART_OF: PART_OF_VALUE, ROLE_LABEL: role}
    if _LABEL_VALUE.match(node):
        labels[NODE_LABEL] = node  # a policy of the user's (or a test's) can single out one node's probe pods
    spec = {"nodeName": node, "automountServiceAccountToken": False, "enableServiceLinks": False,
            "terminationGracePeriodSeconds": 1, "restartPolicy": "Always",
            "tolerations": [{"operator": "Exists"}],  # every selected node, as a DaemonSet would be
            "containers": [_container("netexec", image, port)]}
    if service_port:
        # the port the Services send to, apart from the one pods dial directly: Calico's eBPF conntrack keys a
        # Service connection by its backend (pod IP and target port) and cannot create a second entry for the same
        # tuple, so a client pod that dials a ClusterIP and the backend itself from one source port (the kernel
        # allows it: the destinations differ before NAT) has the later SYN dropped ("failed to create conntrack")
        spec["containers"].append(_container("netexec-service", image, service_port))
    if host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec}


def manifests(namespace, pods, image, http_port, host_port, node_port=0, service_port=None):
    """The probe workload: its namespace, three pods per node, a ClusterIP and a NodePort Service; the server pods
    serve the Services on ``service_port`` (a second container), the pods' direct dials on ``http_port``."""
    labels = {PART_OF: PART_OF_VALUE}
    # hostNetwork pods are "privileged" for Pod Security Admission; the namespace is the check's own
    docs = [{"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": namespace, "labels": dict(labels, **{
                 "pod-security.kubernetes.io/enforce": "privileged"})}}]
    for p in pods:
        docs.append(_pod(namespace, p["server"], p["node"], "server", image, http_port, service_port=service_port))
        docs.append(_pod(namespace, p["client"], p["node"], "client", image, http_port))
        docs.append(_pod(namespace, p["host"], p["node"], "host", image, host_port, host_network=True))
    selector = {PART_OF: PART_OF_VALUE, ROLE_LABEL: "server"}
    port = {"name": "http", "port": 80, "targetPort": service_port or http_port, "protocol": "TCP"}
    docs.append({"apiVersion": "v1", "kind": "Service",
                 "metadata": {"name": "server", "namespace": namespace, "labels": labels},
                 "spec": {"type": "ClusterIP", "selector": selector, "ports": [port]}})
    np = dict(port, nodePort=node_port) if node_port else dict(port)
    docs.append({"apiVersion": "v1", "kind": "Service",
                 "metadata": {"name": "server-nodeport", "namespace": namespace, "labels": labels},
                 "spec": {"type": "NodePort", "externalTrafficPolicy": "Cluster", "selector": selector,
                          "ports": [np]}})
    return docs


def deny_policy(namespace):
    """A NetworkPolicy that selects the server pods and allows no ingress: what the check must see enforced."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": POLICY_NAME, "namespace": namespace, "labels": {PART_OF: PART_OF_VALUE}},
            "spec": {"podSelector": {"matchLabels": {ROLE_LABEL: "server"}}, "policyTypes": ["Ingress"]}}


def dial_query(host, port, request="hostname"):
    """The query of agnhost netexec's ``/dial``: one new connection to ``http://host:port/request``."""
    return {"request": request, "protocol": "http", "host": host, "port": str(port), "tries": "1"}


def nested(client_ip, http_port, host, port, request="hostname"):
    """The ``/dial`` query a host pod is sent so that the client pod at ``client_ip`` dials ``host:port``."""
    inner = urlencode(sorted(dial_query(host, port, request).items()))
    return dial_query(client_ip, http_port, request="dial?" + inner)


def plan(checks, pods, ips, services, http_port, api_server=None, dns_name=None, node_port=None, sources=None):
    """The dials: ``[{"check", "from", "to", "via", "query", "nested", "expect"}]``.

    ``ips``: pod name -> pod IP; ``services``: {"cluster_ip", "node_port"}; ``api_server``: (ClusterIP, port) of the
    ``kubernetes`` Service; ``dns_name``: the server Service's name in the cluster's DNS (None: no DNS);
    ``sources``: the nodes the dials start from (default every node)."""
    out = []
    node_port = node_port or services.get("node_port")

    def add(check, src, to, host, port, expect, from_host=False, request="hostname"):
        if from_host:
            query, through = dial_query(host, port, request), False
        else:
            query, through = nested(ips[src["client"]], http_port, host, port, request), True
        out.append({"check": check, "from": src["node"], "to": to, "via": src["host"], "query": query,
                    "nested": through, "expect": expect})

    for src in sources or pods:
        if "pod_to_pod" in checks or "network_policy" in checks:
            for dst in pods:
                add("pod_to_pod", src, dst["node"], ips[dst["server"]], http_port, dst["server"])
        if "pod_to_service" in checks:
            add("pod_to_service", src, "ClusterIP %s" % services["cluster_ip"], services["cluster_ip"], 80,
                "server-*")
        if "pod_to_nodeport" in checks:
            for dst in pods:
                add("pod_to_nodeport", src, dst["node"], dst["ip"], node_port, "server-*")
        if "host_to_nodeport" in checks:
            for dst in pods:
                add("host_to_nodeport", src, dst["node"], dst["ip"], node_port, "server-*", from_host=True)
        if "pod_to_api_server" in checks and api_server:
            add("pod_to_api_server", src, "kubernetes %s:%s" % api_server, api_server[0], api_server[1],
                HTTPS_ANSWER, request="healthz")
        if "dns" in checks and dns_name:
            add("dns", src, dns_name, dns_name, 80, "server-*")
    return out


def _expected(answer, expect):
    answer = (answer or "").strip()
    if expect.endswith("*"):
        return answer.startswith(expect[:-1])
    if expect == HTTPS_ANSWER:
        return HTTPS_ANSWER in answer
    return answer == expect


def _first_line(text, limit=200):
    text = (text or "").strip().splitlines()
    return (text[0] if text else "")[:limit]


def read_answer(job, body=None, error=None):
    """(outcome, detail): ``ok`` (the expected pod answered), ``failed`` (the source could not connect, or the
    wrong pod answered) or ``unreached`` (the check did not get to the source: the API server's proxy or the host
    pod's hop to its client pod failed - nothing is known of the path itself)."""
    if error is not None:
        return "unreached", "the API server's proxy to pod %s: %s" % (job["via"], _first_line(str(error)))
    try:
        outer = json.loads(body or "{}")
    except ValueError:
        return "unreached", "pod %s answered %r, not agnhost's /dial" % (job["via"], _first_line(body))
    if job["nested"]:
        if outer.get("errors") or not outer.get("responses"):
            return "unreached", "node %s's host network to its client pod: %s" % (
                job["from"], _first_line((outer.get("errors") or ["no answer"])[0]))
        try:
            inner = json.loads(outer["responses"][0] or "{}")
        except ValueError:
            return "unreached", "the client pod answered %r, not agnhost's /dial" % _first_line(
                outer["responses"][0])
    else:
        inner = outer
    if inner.get("errors") or not inner.get("responses"):
        return "failed", _first_line((inner.get("errors") or ["no answer"])[0])
    answer = _first_line(inner["responses"][0])
    if not _expected(answer, job["expect"]):
        return "failed", "answered %r, expected %s" % (answer, job["expect"])
    return "ok", answer


def kube_proxy_rows(pods_by_node, selected, bpf):
    """The kube_proxy_absent rows: with eBPF, no kube-proxy pod on a checked node (Calico served its Services)."""
    rows = []
    for p in selected:
        if not bpf:
            rows.append({"check": "kube_proxy_absent", "from": p["node"], "to": "-", "outcome": "skipped",
                         "detail": "the data plane is not eBPF: kube-proxy serves Services"})
            continue
        running = pods_by_node.get(p["node"]) or []
        if running:
            rows.append({"check": "kube_proxy_absent", "from": p["node"], "to": "-", "outcome": "failed",
                         "detail": "kube-proxy pod %s runs on it with eBPF" % ", ".join(running)})
        else:
            rows.append({"check": "kube_proxy_absent", "from": p["node"], "to": "-", "outcome": "ok",
                         "detail": "no kube-proxy pod: Calico's eBPF data plane served its Services"})
    return rows


def tables(rows):
    """One table per check: a matrix (from down, to across) for the node-pair checks, a list for the others."""
    lines = []
    for check in CHECKS + POLICY_ROWS:
        mine = [r for r in rows if r["check"] == check]
        if not mine:
            continue
        failed = [r for r in mine if r["outcome"] in ("failed", "unreached")]
        passed = len([r for r in mine if r["outcome"] == "ok"])
        lines.append("%s: %d/%d ok" % (check, passed, len([r for r in mine if r["outcome"] != "skipped"])))
        if check in PAIR_CHECKS:
            sources = sorted({r["from"] for r in mine})
            targets = sorted({r["to"] for r in mine})
            width = max([len(s) for s in sources + targets] + [6])
            lines.append("  " + "from \\ to".ljust(width) + "  " + "  ".join(t.ljust(width) for t in targets))
            for s in sources:
                cells = []
                for t in targets:
                    r = next((x for x in mine if x["from"] == s and x["to"] == t), None)
                    cell = r["outcome"] if r else "-"
                    if cell == "ok" and check == POLICY_ROWS[0]:
                        cell = "denied"  # what passes while the NetworkPolicy is in place
                    cells.append(cell.ljust(width))
                lines.append("  " + s.ljust(width) + "  " + "  ".join(cells))
        else:
            for r in mine:
                lines.append("  %s -> %s: %s (%s)" % (r["from"], r["to"], r["outcome"], r["detail"]))
        for r in failed:
            if check in PAIR_CHECKS:
                lines.append("  %s %s -> %s: %s" % (r["outcome"].upper(), r["from"], r["to"], r["detail"]))
    return lines


def failures(rows):
    """``check from -> to: detail`` for every row that did not pass."""
    return ["%s %s -> %s: %s" % (r["check"], r["from"], r["to"], r["detail"]) for r in rows
            if r["outcome"] in ("failed", "unreached")]


# -- disruption --------------------------------------------------------------------------------------------------

RECOVERED_WITHIN = 3.0  # seconds: answering at the end means a success this close to the last attempt


def probe_targets(pods, ips, services, http_port):
    """What the disruption prober dials from the first node: a pod on another node (the same one when only one is
    checked), the ClusterIP, the NodePort of another node from a pod and from the node's host network."""
    src = pods[0]
    dst = pods[1] if len(pods) > 1 else pods[0]
    jobs = plan(PROBE_TARGETS, pods, ips, services, http_port, sources=[src])
    return [dict(j, target=j["check"]) for j in jobs if j["check"] in ("pod_to_service",) or j["to"] == dst["node"]]


def summarize(records):
    """target -> attempted, failed, unmeasured (the check did not reach its source), longest_gap_s (the longest
    time without an answered new connection: from the last success before a run of failures to the first success
    after it, or to the last attempt when it never came), errors (distinct, up to 3) and recovered."""
    out = {}
    for name in sorted({r["target"] for r in records}):
        recs = sorted((r for r in records if r["target"] == name and r["outcome"] != "unreached"),
                      key=lambda r: r["t"])
        unmeasured = len([r for r in records if r["target"] == name and r["outcome"] == "unreached"])
        failed = [r for r in recs if r["outcome"] != "ok"]
        gap, last_ok, run_start = 0.0, None, None
        for r in recs:
            if r["outcome"] == "ok":
                if run_start is not None:
                    gap = max(gap, r["t"] - (last_ok if last_ok is not None else run_start))
                    run_start = None
                last_ok = r["t"]
            elif run_start is None:
                run_start = r["t"]
        if run_start is not None and recs:
            gap = max(gap, recs[-1]["t"] - (last_ok if last_ok is not None else run_start))
        errors = []
        for r in failed:
            e = (r.get("detail") or "")[:120]
            if e and e not in errors:
                errors.append(e)
        out[name] = {"attempted": len(recs), "failed": len(failed), "unmeasured": unmeasured,
                     "longest_gap_s": round(gap, 2), "errors": errors[:3],
                     "recovered": bool(recs) and last_ok is not None and recs[-1]["t"] - last_ok <= RECOVERED_WITHIN}
    return out


def disruption_lines(summary):
    lines = ["target            attempted  failed  unmeasured  longest gap (s)  recovered"]
    for name, s in sorted(summary.items()):
        lines.append("%-17s %9d  %6d  %10d  %15.2f  %9s" % (name, s["attempted"], s["failed"], s["unmeasured"],
                                                            s["longest_gap_s"], "yes" if s["recovered"] else "NO"))
    return lines


IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable")
# what keeps the probe workload from being ready, in the order a user acts on it
READINESS_KINDS = ("image pull", "scheduling", "not created", "not ready", "no answer", "not served")


def pod_problem(waiting_reasons, unschedulable):
    """What keeps a pod of the workload: ``image pull``, ``scheduling`` or ``not ready``."""
    if any(r in IMAGE_PULL_REASONS for r in waiting_reasons):
        return "image pull"
    return "scheduling" if unschedulable else "not ready"


def readiness_reason(kinds, waiting):
    """One line: how many pods each problem keeps (``kinds``, one per ``waiting`` line), then the first line."""
    if not waiting:
        return ""
    counts = ", ".join("%s: %d" % (k, kinds.count(k)) for k in READINESS_KINDS if k in kinds)
    return "%s (first: %s)" % (counts, waiting[0])
