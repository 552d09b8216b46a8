# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the stable API server endpoint Calico should use, as pure functions (no Ansible, no client).

``derive_endpoint`` turns the platform, the kubeconfig's server and the user's variables into the host and
port of ConfigMap ``kubernetes-services-endpoint`` (Calico's documentation: "Enable eBPF on an existing cluster",
section "Configure Calico to talk directly to the API server"), and validates them:
the host has no scheme, path, port or spaces and is a DNS name (an IP literal only when allowed), the port
is 1-65535. Problems are returned, never raised, each naming the variable to set (``prefix`` + field: the
role passes ``services_endpoint_`` so messages name its variables).

``dns_name_in_ebpf`` refuses a DNS name on a cluster in eBPF mode (or about to be) unless the user states that every
node resolves it without the cluster (Calico issue 10683: calico-node hangs at boot otherwise).

The platform-specific operator helpers (``deployment_progress``, ``restart_progress``) judge the operator's
Deployment and pods read from the API, for the role's waits.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import condition, count
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.endpoint import ISSUE as DNS_ISSUE
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.endpoint import is_ip_literal
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.facts import (
    AWS_DNS, AWS_PLATFORMS, DEFAULT_PORTS, KOPS_HOST_PREFIX, MKE_HOST, PLATFORM_TITLES, SUPPORTED_PLATFORMS)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.server import kops_cluster_name_from_host, parse_server

try:
    import ipaddress as _ipaddress
except ImportError:  # pragma: no cover - Python 2.7 targets
    _ipaddress = None

try:
    _STRING_TYPES = (str, unicode)  # noqa: F821  pylint: disable=undefined-variable
except NameError:
    _STRING_TYPES = (str,)

HOST_KEY = "KUBERNETES_SERVICE_HOST"
PORT_KEY = "KUBERNETES_SERVICE_PORT"
AWS_NAMESERVERS = (AWS_DNS,)
# the services_endpoint_info module's option names (``host`` and ``port`` are kubernetes.core auth options)
MODULE_NAMES = {"host": "endpoint_host", "port": "endpoint_port", "timeout": "wait_timeout"}

_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


def var_name(prefix, field):
    """The name of the variable (or option) for ``field``: ``prefix`` + field, or ``prefix[field]`` when
    ``prefix`` is a mapping (the module's own option names, e.g. ``host`` -> ``endpoint_host``)."""
    if isinstance(prefix, dict):
        return prefix.get(field, field)
    return "%s%s" % (prefix or "", field)


def problem(prefix, field, message):
    """One problem: ``{field, message}``; the message starts with the variable's name."""
    name = var_name(prefix, field)
    return {"field": name, "message": "%s: %s" % (name, message)}


def settings_problems(prefix, timeout, rollout_timeout, interval, aws_dns, nameservers):
    """The role's waits and AWS DNS servers out of range, each naming its variable (``prefix`` + field): the
    timeouts and the interval positive, the interval not longer than either timeout; at least one DNS server unless
    ``aws_dns`` is false. ``None`` - not given, not checked."""
    out = []
    given = [v for v in (timeout, rollout_timeout, interval) if v is not None]
    if given and (min(given) <= 0 or (interval is not None and interval > min(given))):
        out.append({"field": var_name(prefix, "timeout"), "message": (
            "%s (%s), %s (%s) and %s (%s) must be positive, the interval not longer than either timeout" % (
                var_name(prefix, "timeout"), timeout, var_name(prefix, "rollout_timeout"), rollout_timeout,
                var_name(prefix, "poll_interval"), interval))})
    if nameservers is not None and not nameservers and aws_dns is not False:
        name = var_name(prefix, "aws_dns_nameservers")
        out.append({"field": name, "message": "%s is an empty list: give at least one DNS server address (AWS's is "
                                              "%s), or set %s: false" % (name, AWS_DNS, var_name(prefix, "aws_dns"))})
    return out


def is_loopback_name(host):
    """``localhost`` (and ``*.localhost``): only the node itself answers there."""
    low = (host or "").lower().rstrip(".")
    return low == "localhost" or low.endswith(".localhost")


def is_loopback(host):
    """A loopback name or address (``localhost``, ``127.0.0.0/8``, ``::1``): on a node, the node itself."""
    if is_loopback_name(host):
        return True
    if not is_ip_literal(host):
        return False
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if _ipaddress is not None:
        return _ipaddress.ip_address(u"%s" % text).is_loopback
    return text.startswith("127.") or text == "::1"  # pragma: no cover - Python 2.7 targets


def validate_host(host, prefix="", field="host"):
    """Problems of a host name for KUBERNETES_SERVICE_HOST: no scheme, path, port, spaces; a DNS name or an
    IP literal (the IP rule is ``check_ip``)."""
    if not isinstance(host, _STRING_TYPES) or not host.strip():
        return [problem(prefix, field, "is empty: give the API server's stable DNS name")]
    if host != host.strip() or re.search(r"\s", host):
        return [problem(prefix, field, "%r contains spaces: give the bare host name" % host)]
    if "://" in host:
        return [problem(prefix, field, "%r has a scheme: give the bare host name, without %s://"
                        % (host, host.split("://", 1)[0]))]
    if "/" in host or "?" in host or "#" in host:
        return [problem(prefix, field, "%r has a path: give the bare host name" % host)]
    if is_ip_literal(host):
        if host.startswith("["):
            return [problem(prefix, field, "%r: give the IPv6 address without brackets" % host)]
        return []
    if ":" in host:
        return [problem(prefix, field, "%r contains a port: give the host alone and the port in %s"
                        % (host, var_name(prefix, "port")))]
    name = host[:-1] if host.endswith(".") else host
    if len(name) > 253 or not all(_LABEL.match(label) for label in name.split(".")):
        return [problem(prefix, field, "%r is not a valid DNS name (letters, digits, '-' and '.')" % host)]
    return []


def to_port(value):
    """An int port from an int or a string of digits; None otherwise (booleans are not ports)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, _STRING_TYPES) and value.strip().isdigit():
        return int(value.strip())
    return None


def validate_port(value, prefix="", field="port"):
    port = to_port(value)
    if port is None:
        return [problem(prefix, field, "%r is not a port number (1-65535)" % (value,))]
    if not 1 <= port <= 65535:
        return [problem(prefix, field, "%d is out of range: a port is 1-65535" % port)]
    return []


def check_ip(host, allow_ip, origin, prefix="", allow_loopback=False):
    """A loopback host is refused unless ``allow_loopback``: calico-node reaches the API server through this
    endpoint before any Service works (no kube-proxy), and on a node a loopback address is the node itself - only a
    per-node API proxy answers there. Any other IP literal is refused unless ``allow_ip``: a dynamic node IP changes
    on restart and Calico then loses its connection to the API server."""
    if is_loopback(host):
        if allow_loopback:
            return []
        return [problem(prefix, "allow_loopback",
                        "the API server host would be %s (%s), a loopback address: on every node that is the node "
                        "itself, so calico-node, which reaches the API server through this endpoint while no "
                        "Service works yet, would not reach it. Set %s to an address the nodes reach (kubeadm: the "
                        "controlPlaneEndpoint; a kubeconfig made on a control-plane node often says 127.0.0.1), or "
                        "set %s: true if every node serves the API server on its own loopback (a per-node proxy "
                        "such as Talos' KubePrism)" % (host, origin, var_name(prefix, "host"),
                                                       var_name(prefix, "allow_loopback")))]
    if allow_ip or not is_ip_literal(host):
        return []
    what = "the IP address %s" % host
    return [problem(prefix, "allow_ip",
                    "the API server host would be %s (%s). A node IP can change when the node restarts and "
                    "Calico then loses its connection to the API server. Set %s to a stable DNS name or "
                    "the load balancer's, or set %s: true if this address is static"
                    % (what, origin, var_name(prefix, "host"), var_name(prefix, "allow_ip")))]


def derive_endpoint(platform, server=None, host=None, port=None, allow_ip=False, allow_loopback=False,
                    kops_cluster_name=None,
                    openshift_cluster_name=None, openshift_base_domain=None, openshift_internal_uri=None,
                    mke_host=MKE_HOST, kops_host_prefix=KOPS_HOST_PREFIX, ports=None, prefix=""):
    """``{platform, host, port, host_source, port_source, problems}``.

    ``server`` is ``parse_server`` of the kubeconfig in use (or None). Explicit ``host``/``port`` win;
    otherwise per platform - kubeadm/generic: the kubeconfig's server; kOps: ``api.internal.<cluster>``
    (the cluster name from ``kops_cluster_name`` or the server's ``api.<cluster>``), 443; OpenShift:
    ``api.<cluster_name>.<base_domain>`` from the two names, else Infrastructure ``cluster``
    ``status.apiServerInternalURI``, else the server when it is ``api.*``, 6443; EKS and AKS: the server's
    FQDN, 443; MKE: ``proxy.local``, 6444.
    """
    ports = dict(DEFAULT_PORTS, **(ports or {}))
    out = {"platform": platform, "host": None, "port": None, "host_source": None, "port_source": None,
           "problems": []}
    problems = out["problems"]
    p = prefix or ""
    if platform not in SUPPORTED_PLATFORMS:
        title = PLATFORM_TITLES.get(platform, platform)
        problems.append(problem(p, "platform", "%s is not supported by the eBPF data plane (choose one of %s)"
                                % (title, ", ".join(SUPPORTED_PLATFORMS))))
        return out
    if platform in ("kubeadm", "generic", "eks", "aks"):
        derived = _from_server(platform, server, host, ports, p, problems)
    elif platform == "kops":
        derived = _kops(server, host, kops_cluster_name, kops_host_prefix, ports, p, problems)
    elif platform == "openshift":
        derived = _openshift(server, host, openshift_cluster_name, openshift_base_domain, openshift_internal_uri,
                             ports, p, problems)
    else:  # mke
        derived = (mke_host, "the MKE default (a reverse proxy on each node)", ports["mke"], "the MKE default")
    if host is not None and host != "":
        out["host"], out["host_source"] = host, var_name(p, "host")
    else:
        out["host"], out["host_source"] = derived[0], derived[1]
    if port is not None and port != "":
        out["port"], out["port_source"] = port, var_name(p, "port")
    else:
        out["port"], out["port_source"] = derived[2], derived[3]
    _check_endpoint(out, p, allow_ip, allow_loopback)
    return out


def _server_text(server):
    return "the kubeconfig's server %s" % server["url"] if server else None


def _from_server(platform, server, host, ports, p, problems):
    """kubeadm, generic, EKS and AKS: the kubeconfig's server (EKS and AKS: on their own port).
    ``(host, host_source, port, port_source)``, as every ``_<platform>`` here."""
    if server:
        if platform in ("eks", "aks"):
            return (server["host"], _server_text(server), ports[platform],
                    "the %s default" % PLATFORM_TITLES[platform])
        return server["host"], _server_text(server), server["port"], _server_text(server)
    if not host:
        problems.append(problem(p, "host", "the kubeconfig in use has no server URL to derive the API "
                                           "server host from: set it"))
    return None, None, None, None


def _kops(server, host, kops_cluster_name, kops_host_prefix, ports, p, problems):
    """kOps: ``<prefix><cluster name>`` (the name given, or the one in the server's ``api.<cluster>``), 443."""
    derived_host = host_source = None
    name = kops_cluster_name or (kops_cluster_name_from_host(server["host"]) if server else None)
    if name:
        derived_host = "%s%s" % (kops_host_prefix, name)
        host_source = (var_name(p, "kops_cluster_name") if kops_cluster_name
                       else "the kOps cluster name in %s" % _server_text(server))
    elif not host:
        problems.append(problem(p, "kops_cluster_name", "the kOps cluster name is needed for the endpoint "
                                "%s<cluster name> (the kubeconfig's server does not show it): set it"
                                % kops_host_prefix))
    return derived_host, host_source, ports["kops"], "the kOps default"


def _openshift(server, host, cluster_name, base_domain, internal_uri, ports, p, problems):
    """OpenShift: ``api.<cluster_name>.<base_domain>`` from the two names, else Infrastructure ``cluster``
    ``status.apiServerInternalURI``, else the server when it is ``api.*``; 6443."""
    port, port_source = ports["openshift"], "the OpenShift default"
    internal = parse_server(internal_uri) if internal_uri else None
    if cluster_name and base_domain:
        return ("api.%s.%s" % (cluster_name, base_domain), "%s and %s" % (
            var_name(p, "openshift_cluster_name"), var_name(p, "openshift_base_domain")), port, port_source)
    if (cluster_name or base_domain) and not host:
        missing = "openshift_base_domain" if cluster_name else "openshift_cluster_name"
        problems.append(problem(p, missing, "needed with %s (the host is api.<cluster_name>.<base_domain>)"
                                % var_name(p, "openshift_cluster_name" if cluster_name else "openshift_base_domain")))
    elif internal:
        source = "Infrastructure cluster status.apiServerInternalURI %s" % internal["url"]
        return internal["host"], source, internal["port"], source
    elif server and server["host"].lower().startswith("api."):
        return server["host"], _server_text(server), port, port_source
    elif not host:
        problems.append(problem(p, "openshift_cluster_name", "the OpenShift API host api.<cluster_name>."
                                "<base_domain> cannot be derived (no Infrastructure status, the "
                                "kubeconfig's server is not api.*): set %s and %s, or %s"
                                % (var_name(p, "openshift_cluster_name"), var_name(p, "openshift_base_domain"),
                                   var_name(p, "host"))))
    return None, None, port, port_source


def _check_endpoint(out, p, allow_ip, allow_loopback):
    """The chosen host and port checked (a problem names where a derived value came from and the variable that
    sets it); the port made a number."""
    problems = out["problems"]
    if out["host"] is not None and not problems:
        host_problems = _validated(out, "host", validate_host, "derived from", p)
        problems.extend(host_problems)
        if not host_problems:
            problems.extend(check_ip(out["host"], allow_ip, "from %s" % out["host_source"], prefix=p,
                                     allow_loopback=allow_loopback))
    if out["port"] is not None:
        port_problems = _validated(out, "port", validate_port, "from", p)
        problems.extend(port_problems)
        if not port_problems:
            out["port"] = to_port(out["port"])
    elif not problems:
        problems.append(problem(p, "port", "cannot be derived: set it"))


def _validated(out, key, validate, came, p):
    """The problems of ``out[key]``; a value not given by its own variable says where it came from."""
    found = validate(out[key], prefix=p)
    if found and out["%s_source" % key] != var_name(p, key):
        for item in found:
            item["message"] += " (%s %s: set %s)" % (came, out["%s_source" % key], var_name(p, key))
    return found


def needs_resolving(host):
    """A DNS name a node must resolve (not an IP address, not a loopback name its /etc/hosts answers)."""
    return (isinstance(host, _STRING_TYPES) and bool(host.strip()) and not is_ip_literal(host.strip())
            and not is_loopback_name(host.strip()))


def dns_name_in_ebpf(host, host_source, evidence, nodes_resolve_host, prefix=""):
    """A DNS name for the host of a cluster in eBPF mode (or about to be: ``evidence`` says what says so) is refused
    unless the user states that every node resolves it without the cluster (``nodes_resolve_host``): calico-node in
    eBPF mode resolves KUBERNETES_SERVICE_HOST when it starts, before it serves any Service, so a name only the
    cluster's DNS answers hangs it at boot (Calico issue 10683). An IP address, a loopback name (each node's own
    /etc/hosts) or no evidence of eBPF: no problem."""
    if nodes_resolve_host or not evidence or not isinstance(host, _STRING_TYPES) or not host.strip():
        return []
    if not needs_resolving(host):
        return []
    name = var_name(prefix, "nodes_resolve_host")
    return [problem(prefix, "nodes_resolve_host",
                    "the API server host would be the DNS name %s (from %s) on a cluster in eBPF mode (%s): calico-node "
                    "resolves it when it starts, before it serves any Service, and hangs at boot on a node that "
                    "cannot resolve it without the cluster's DNS (%s). Set %s: true (true or false, default false) "
                    "once every node resolves %s through its own resolver or /etc/hosts, or set %s to a static IP "
                    "address with %s: true; nothing was written"
                    % (host, host_source or "derived", "; ".join(evidence), DNS_ISSUE, name, host,
                       var_name(prefix, "host"), var_name(prefix, "allow_ip")))]


def configmap_data(host, port):
    """The ConfigMap's data: both values strings (the operator reads them as environment variables)."""
    return {HOST_KEY: "%s" % host, PORT_KEY: "%d" % int(port)}


def aws_dns_wanted(setting, platform):
    """Whether to patch the operator's DNS: the user's ``true``/``false`` wins; unset: EKS and kOps."""
    if setting is None or setting == "":
        return platform in AWS_PLATFORMS
    return bool(setting)


# -- the operator (Deployment and pods) -------------------------------------------------------------

def deployment_progress(dep):
    """``{exists, rolled_out, line, status}`` of a Deployment read from the API (None: absent)."""
    if not dep:
        return {"exists": False, "rolled_out": False, "line": "Deployment not found", "status": {}}
    meta, spec, status = dep.get("metadata") or {}, dep.get("spec") or {}, dep.get("status") or {}
    wanted = count(spec.get("replicas", 1))
    numbers = {"replicas": wanted, "updated": count(status.get("updatedReplicas")),
               "ready": count(status.get("readyReplicas")), "available": count(status.get("availableReplicas")),
               "total": count(status.get("replicas")), "generation": count(meta.get("generation")),
               "observedGeneration": count(status.get("observedGeneration"))}
    rolled = (numbers["observedGeneration"] >= numbers["generation"] and numbers["updated"] == wanted
              and numbers["ready"] == wanted and numbers["available"] == wanted and numbers["total"] == wanted)
    conditions = ["%s=%s%s" % (c.get("type"), c.get("status"), (" (%s)" % c["message"]) if c.get("message") else "")
                  for c in status.get("conditions") or []]
    line = ("%s/%s: %d wanted, %d updated, %d ready, %d available, %d total (generation %d, observed %d)%s"
            % (meta.get("namespace"), meta.get("name"), wanted, numbers["updated"], numbers["ready"],
               numbers["available"], numbers["total"], numbers["generation"], numbers["observedGeneration"],
               ("; conditions: " + "; ".join(conditions)) if conditions else ""))
    return {"exists": True, "rolled_out": rolled, "line": line, "status": numbers, "conditions": conditions}


def pod_ready(pod):
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if status.get("phase") != "Running":
        return False
    return condition(pod, "Ready").get("status") == "True"


def pod_line(pod):
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    state = status.get("phase") or "Unknown"
    if meta.get("deletionTimestamp"):
        state += ", terminating"
    state += ", ready" if pod_ready(pod) else ", not ready"
    return "%s (%s)" % (meta.get("name"), state)


def restart_progress(pods, previous):
    """After deleting the operator pods named in ``previous``: done when none of them is left and a new pod
    is Running and Ready. ``{restarted, new_ready, old_left, line}``."""
    previous = set(previous or ())
    names = [(p.get("metadata") or {}).get("name") for p in pods]
    new_ready = sorted((p.get("metadata") or {}).get("name") for p in pods
                       if (p.get("metadata") or {}).get("name") not in previous and pod_ready(p))
    old_left = sorted(n for n in names if n in previous)
    line = "operator pods: %s" % (", ".join(pod_line(p) for p in pods) or "none")
    return {"restarted": bool(new_ready) and not old_left, "new_ready": new_ready, "old_left": old_left,
            "line": line}


def operator_back(operator):
    """The operator's Deployment rolled out and, after a restart (``restart`` of ``restart_progress``), a new pod
    Running and Ready in place of the old ones."""
    operator = operator or {}
    return bool(operator.get("rolled_out")) and bool((operator.get("restart") or {"restarted": True})["restarted"])


def operator_not_back(operator, timeout):
    """One line: the operator not back within ``timeout`` seconds, in the cluster's words (its Deployment's status
    line, then the restart's line or its pods)."""
    operator = operator or {}
    restart = operator.get("restart") or {}
    return "the operator did not come back within %ss: %s; %s" % (
        timeout, operator.get("line") or "its Deployment was not found",
        restart.get("line") or "operator pods: %s" % (", ".join(operator.get("pod_lines") or []) or "none"))


def configmap_written_at(cm):
    """When the ConfigMap was last written (RFC 3339, UTC, whole seconds): the latest ``time`` of its managedFields
    (each writer's last change), else its creationTimestamp; None for no ConfigMap."""
    if not cm:
        return None
    meta = cm.get("metadata") or {}
    times = [f.get("time") for f in meta.get("managedFields") or [] if f.get("time")]
    return max(times) if times else meta.get("creationTimestamp")


def pods_started_before(pods, written_at):
    """The operator pods created before ``written_at`` (a pod reads the ConfigMap through ``envFrom`` when it
    starts, so these run with an older endpoint): their names. A pod being deleted is not counted. Timestamps of the
    same format compare as strings; a pod created in the same second as the write is taken as having read it."""
    if not written_at:
        return []
    return sorted((p.get("metadata") or {}).get("name") for p in pods
                  if not (p.get("metadata") or {}).get("deletionTimestamp")
                  and ((p.get("metadata") or {}).get("creationTimestamp") or written_at) < written_at)
