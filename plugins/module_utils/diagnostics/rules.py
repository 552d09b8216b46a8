# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a diagnostics archive holds, and in what form (pure; ``runner.py`` reads and writes).

Calico's support asks for the operator's resources, Calico's configuration, the API server endpoint ConfigMap,
kube-proxy's, the pods of Calico's namespaces with their recent logs and events, and the nodes' conditions and
versions: the entries below, read with the job's credentials. Nothing here reads a Secret; what could still carry a
credential is redacted before it is written: a Secret's data wherever one turns up (``k8s/redact.py``), the value of
a container's environment variable whose name says it is a credential, and any bearer token (a JSON Web Token) in
a log line or an object.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import MARKER, redact_object

RECORD_LABEL = "lifecycle.calico-ops.io/record"
# environment variable names whose value is a credential (a literal value; valueFrom only names a Secret)
CREDENTIAL_ENV = re.compile(r"(TOKEN|PASSWORD|PASSWD|SECRET|API_?KEY|PRIVATE_?KEY|CREDENTIALS?)", re.IGNORECASE)
# a JSON Web Token (ServiceAccount tokens, OIDC ID tokens): three base64url parts, the first a JSON header
JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
MAX_LOG_LINES = 100000


def object_entries(services_endpoint=("tigera-operator", "kubernetes-services-endpoint"),
                   kube_proxy_namespace="kube-system", kube_proxy_daemonset="kube-proxy",
                   kube_proxy_configmaps=("kube-proxy", "kube-proxy-config"), record_label=RECORD_LABEL):
    """``(file name, objects_info entry)`` for every object read as it is: the operator's resources, Calico's
    configuration (through ``crd.projectcalico.org/v1``, served without Calico's API server), the endpoint
    ConfigMap, kube-proxy's DaemonSet and ConfigMaps, and the collection's records (ConfigMaps by label)."""
    ns, name = services_endpoint
    out = [
        ("installations", {"api_version": "operator.tigera.io/v1", "kind": "Installation"}),
        ("apiservers", {"api_version": "operator.tigera.io/v1", "kind": "APIServer"}),
        ("tigerastatuses", {"api_version": "operator.tigera.io/v1", "kind": "TigeraStatus"}),
        ("felixconfigurations", {"api_version": "crd.projectcalico.org/v1", "kind": "FelixConfiguration"}),
        ("kubecontrollersconfigurations",
         {"api_version": "crd.projectcalico.org/v1", "kind": "KubeControllersConfiguration"}),
        ("ippools", {"api_version": "crd.projectcalico.org/v1", "kind": "IPPool"}),
        ("services-endpoint-configmap", {"api_version": "v1", "kind": "ConfigMap", "namespace": ns, "name": name}),
        ("kube-proxy-daemonset", {"api_version": "apps/v1", "kind": "DaemonSet", "namespace": kube_proxy_namespace,
                                  "name": kube_proxy_daemonset}),
    ]
    for cm in kube_proxy_configmaps or ():
        entry = {"api_version": "v1", "kind": "ConfigMap", "namespace": kube_proxy_namespace, "name": cm}
        out.append(("kube-proxy-configmap-" + cm, entry))
    out.append(("records", {"api_version": "v1", "kind": "ConfigMap", "label_selectors": [record_label]}))
    return out


def problems(path, namespaces, log_lines, workers, prefix=""):
    """The bad input of the module's options, one line each naming the option (``prefix``: a role's variables)."""
    out = []
    if not path or not str(path).strip():
        out.append("%spath: the archive's path is empty" % prefix)
    elif not str(path).endswith((".tar.gz", ".tgz")):
        out.append("%spath: %s must end in .tar.gz or .tgz (a gzipped tar archive is written)" % (prefix, path))
    if not namespaces or any(not isinstance(n, str) or not n.strip() for n in namespaces):
        out.append("%snamespaces: a list of namespace names is needed, got %s" % (prefix, json.dumps(namespaces)))
    if not isinstance(log_lines, int) or isinstance(log_lines, bool) or not 0 <= log_lines <= MAX_LOG_LINES:
        out.append("%slog_lines: 0 (no logs) to %d lines per container, got %s" % (prefix, MAX_LOG_LINES, log_lines))
    if not isinstance(workers, int) or workers < 1:
        out.append("%sworkers: 1 or more, got %s" % (prefix, workers))
    return out


def slim_node(node):
    """A node as support reads it: its name, labels, addresses, conditions and nodeInfo (versions, kernel, OS)."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    return {"name": meta.get("name"), "labels": meta.get("labels") or {},
            "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
            "taints": (node.get("spec") or {}).get("taints") or [],
            "addresses": status.get("addresses") or [], "conditions": status.get("conditions") or [],
            "nodeInfo": status.get("nodeInfo") or {}}


def containers(pod):
    """``(name, kind)`` of a pod's init containers and containers, in its spec's order."""
    spec = pod.get("spec") or {}
    return ([(c.get("name"), "init") for c in spec.get("initContainers") or []]
            + [(c.get("name"), "container") for c in spec.get("containers") or []])


def _redact_env(container):
    for env in container.get("env") or []:
        if isinstance(env, dict) and "value" in env and CREDENTIAL_ENV.search(str(env.get("name") or "")):
            env["value"] = MARKER


def redact(value):
    """A copy of ``value`` (objects, lists of objects) with Secret data masked (``redact_object``), the literal
    values of credential-named environment variables of every container masked, and bearer tokens cut from every
    string."""
    value = redact_object(value)
    _walk_containers(value)
    return _strings(value)


def _walk_containers(value):
    if isinstance(value, dict):
        for key in ("containers", "initContainers", "ephemeralContainers"):
            listed = value.get(key)
            for container in listed if isinstance(listed, list) else ():
                if isinstance(container, dict):
                    _redact_env(container)
        for item in value.values():
            _walk_containers(item)
    elif isinstance(value, list):
        for item in value:
            _walk_containers(item)


def _strings(value):
    if isinstance(value, dict):
        return dict((k, _strings(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_strings(v) for v in value]
    if isinstance(value, str):
        return redact_tokens(value)
    return value


def redact_tokens(text):
    """``text`` with every JSON Web Token replaced by the marker."""
    return JWT.sub(MARKER, text) if text else text


def as_json(value):
    """The text of one file of the archive (sorted keys: two archives of the same cluster compare line by line)."""
    return json.dumps(value, indent=2, sort_keys=True, default=str) + "\n"


def member_name(*parts):
    """A path inside the archive made of API names (DNS labels: no '/' or '..'), made safe all the same."""
    return "/".join(re.sub(r"[^A-Za-z0-9._-]", "_", p).lstrip(".") or "_" for p in parts)


def log_problem(status, reason):
    """The line that stands in for a container's log the API server did not give."""
    return "no log: %s%s" % (("HTTP %s " % status) if status else "", reason)


def summary_lines(summary):
    """What the role prints: where the archive is, what it holds, what could not be read."""
    lines = ["Diagnostics archive %s (%d bytes, mode 0600)" % (summary["path"], summary["size"]),
             "objects: %s" % ", ".join("%s %d" % (k, v) for k, v in sorted(summary["objects"].items())),
             "nodes: %d; pods: %s; logs: %d containers (last %d lines each)" % (
                 summary["nodes"], ", ".join("%s %d" % (k, v) for k, v in sorted(summary["pods"].items())),
                 summary["logs"], summary["log_lines"]),
             "records: %d ConfigMaps, %d files" % (summary["records"], summary["record_files"])]
    lines.extend("not collected: " + p for p in summary["problems"])
    return lines
