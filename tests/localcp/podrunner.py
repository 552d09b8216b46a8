"""Real processes behind the pods of Calico's control components: what a kubelet would do for them.

kwok marks every pod Running and ready but executes nothing. For the containers whose image is one of the
Calico control components built into the cache (see ``COMPONENTS``), this runner does what a kubelet would:

* it starts the binary whose version matches the image's tag (``quay.io/tigera/operator:v1.36.16`` runs the
  operator built from v1.36.16; a tag with no binary is logged and left without a process);
* with the container's environment as a kubelet builds it: the ``kubernetes`` Service's ClusterIP and port as
  ``KUBERNETES_SERVICE_HOST/PORT``, then ``envFrom`` (ConfigMaps, Secrets; optional ones may be missing), then
  ``env`` (values, ``$(VAR)`` references, fieldRef, configMapKeyRef, secretKeyRef, resourceFieldRef), read when
  the container starts, as a kubelet reads them;
* authenticated as the pod's ServiceAccount (a TokenRequest bound to the pod, in a kubeconfig given as
  ``KUBECONFIG``), so what the cluster's RBAC grants that ServiceAccount is what is enforced, not admin;
* with the pod's ConfigMap, Secret, projected, downward API, emptyDir and hostPath volumes written into a
  directory of the process's own; an argument or environment value that names a path under a mountPath is
  rewritten to that directory (a process cannot have the real mount points without a container runtime);
* a new pod (rollout, restart, image change) gets a new process, the old one is stopped when its pod goes
  (deleted, terminating, scaled to 0); a process that exits is started again with a back-off, as
  ``restartPolicy: Always`` does (calico-kube-controllers exits on purpose when its configuration changes).

On a control plane whose nodes have a network (dataplane.py) it also runs the data plane: the real calico-node and
calico-typha inside their node's namespaces (``where="node"``), and wires pods that want a network with Calico's
CNI plugin (podnet.py; ``where="pod"``: the agnhost netexec stand-in, and calico-apiserver there). What such a run
does that a real host would not is written, one line each, at the top of the process's log (``_notes``).

Logs: ``<run dir>/pods/<namespace>_<pod>_<container>.log`` (with the runner's lines), and the process's output alone in
the CRI format under ``pods/cri/`` (copied from the first as it grows: ``follow_logs``), which ``kubectl logs`` reads
through kwok (``_ensure_logs_object``); ``<run dir>/pods/processes.json`` lists what runs
(tests read it through ``localcp.fixtures.Cluster.processes``), ``pods/networks.json`` the pods' networks. The runner authenticates as ``localcp-podrunner``
(its reads are left out of the audit log, like kwok's), so writes by the components are the components' own
ServiceAccounts' in the audit log, never ``admin``.

Run as ``python -m localcp.podrunner --run-dir DIR`` by ``ControlPlane`` (a component of every control plane).
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from . import dataplane, podnet
from .versions import CALICO_VERSION, KUBERNETES_VERSION, OPERATOR_VERSIONS, UPGRADE_SOURCE_DATAPLANES

TOKEN_SECONDS = 7 * 24 * 3600
BACKOFF_MAX = 20.0
DETACH_AFTER = 30.0  # a node with no calico-node pod for this long loses its BPF programs (_detach_orphaned_nodes)


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} [podrunner] {msg}", flush=True)


# -- the components ---------------------------------------------------------------------------------------

class Component:
    """A component whose binary the cache holds. ``image``: the image's last two path segments. ``where``: the
    namespaces its process runs in - ``host`` (this machine's, as the control components always did), ``node``
    (the holder of the pod's node: host-network pods of the data plane, dataplane.py) or ``pod`` (the pod's own
    network, wired by Calico's CNI plugin: podnet.py). ``entry``: the image's entrypoint when it is not the binary
    itself (argv before the container's args)."""

    def __init__(self, name, image, binaries, extra_args=None, extra_env=None, exclusive=False, where="host",
                 entry=None, where_dataplane=None, command_binary=None, prepare=None, probes=False):
        self.name, self.image = name, image
        # the image's binary as a container's `command` names it (kube-proxy's DaemonSet runs
        # `/usr/local/bin/kube-proxy --config=...`): that command's arguments are run, with the cache's binary
        self.command_binary = command_binary
        self._prepare = prepare  # (ctx, args) -> notes: files the process reads, made to work here
        # readiness from the container's readinessProbe, run as a kubelet runs it (PodRunner._probe), instead of
        # kwok's "ready at once": the DaemonSet rollout and TigeraStatus then wait for the real process
        self.probes = probes
        self.exclusive = exclusive  # one process per namespace (it binds an address of its Service)
        self._binaries = binaries          # tag -> state["bins"] key; "*": any tag
        self._extra_args = extra_args
        self._extra_env = extra_env
        self.where = where
        self.where_dataplane = where_dataplane or where  # where it runs on a control plane with a data plane
        self.entry = entry

    def binary(self, bins: dict, tag: str):
        key = self._binaries.get(tag) or self._binaries.get("*")
        if key == "python":
            return sys.executable
        return bins.get(key) if key else None

    def extra_args(self, ctx) -> list:
        return self._extra_args(ctx) if self._extra_args else []

    def extra_env(self, ctx) -> dict:
        return self._extra_env(ctx) if self._extra_env else {}

    def prepare(self, ctx, args) -> list:
        return self._prepare(ctx, args) if self._prepare else []


def _operator_env(ctx) -> dict:
    # In a pod the operator reads its namespace and ServiceAccount from the files of the ServiceAccount volume
    # (/var/run/secrets/kubernetes.io/serviceaccount/...), absolute paths a process here cannot have; these two
    # variables are the operator's own documented overrides of those files.
    return {"OPERATOR_NAMESPACE": ctx.pod["metadata"]["namespace"],
            "OPERATOR_SERVICEACCOUNT": ctx.pod["spec"].get("serviceAccountName") or "default"}


def _operator_args(ctx) -> list:
    # one replica, no leader election (it needs the in-pod namespace file and a lease nobody else contends for)
    return ["--enable-leader-election=false"]


def _kube_controllers_args(ctx) -> list:
    return [f"--status-file={ctx.workdir / 'status.json'}"]


def _apiserver_args(ctx) -> list:
    """calico-apiserver serves at the ClusterIP and port of the Service that selects its pod: with aggregator
    routing off (the default) kube-apiserver dials an APIService's Service at ClusterIP:port, and the service
    range of this control plane is a loopback /16 (127.N.0.0/16), so that address is on ``lo`` already."""
    kcfg = str(ctx.kubeconfig)
    # its ServiceAccount's kubeconfig for the delegated authentication and authorization too (in a pod they come
    # from the ServiceAccount token file, which a process here does not have at its absolute path)
    auth = [f"--kubeconfig={kcfg}", f"--authentication-kubeconfig={kcfg}", f"--authorization-kubeconfig={kcfg}"]
    if ctx.where != "host":
        # with a data plane it runs in its pod's own network, on the port its container declares, and the Service
        # reaches it as any pod's: through Calico's BPF NAT
        return auth
    svc = ctx.runner.service_for(ctx.pod)
    if svc is None:
        return []
    ip = svc["spec"].get("clusterIP")
    port = (svc["spec"].get("ports") or [{}])[0].get("port", 443)
    return [f"--bind-address={ip}", f"--secure-port={port}"] + auth


# Settings of calico-node that keep each node's Felix to its own namespaces. On a real host they would be wrong or
# needless; here, without them, Felix changes this whole machine. Environment variables win over
# FelixConfiguration (Felix's own order), so these hold whatever the install sets; each reason is printed at start.
NODE_PRIVATE_FELIX = {
    "FELIX_BPFCONNECTTIMELOADBALANCING": ("Disabled", "connect-time load balancing attaches to the cgroup root, "
                                          "which every node here shares with this machine"),
    "FELIX_BPFHOSTNETWORKEDNATWITHOUTCTLB": ("Enabled", "Services for host-networked clients then go through the "
                                             "node's tc programs instead (Calico's setting for that case)"),
    "FELIX_BPFDISABLEUNPRIVILEGED": ("false", "else Felix sets the machine-wide kernel.unprivileged_bpf_disabled"),
    "FELIX_USAGEREPORTINGENABLED": ("false", "no usage report is sent from this machine"),
    "FELIX_XDPENABLED": ("false", "XDP acceleration of untracked policies loads /usr/lib/calico/bpf/filter.o, a path of "
                                  "this machine that the build does not fill (with bpftool present Felix retries it "
                                  "on every apply); no test uses doNotTrack policies"),
}


def _calico_node_env(ctx) -> dict:
    env = {k: v for k, (v, _why) in NODE_PRIVATE_FELIX.items()}
    # the cgroup v2 path Felix would mount and attach to: a directory of the node's own
    env["CALICO_CGROUP_PATH"] = str(ctx.workdir / "cgroup")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])  # the entrypoint below is a Python module
    return env


def _calico_node_entry(ctx, binary) -> list:
    # the image's runit + rc.local of the pod's release, with the real binary (calico_node_image.py)
    return [sys.executable, "-m", "localcp.calico_node_image", binary, parse_image(ctx.container.get("image") or "")[1]]


def _release_binaries(name: str) -> dict:
    """tag -> bins key of a data-plane binary: v3.31.4's under its name, an upgrade source's as ``name@release``
    (releases.py builds them)."""
    return dict({CALICO_VERSION: name}, **{release: f"{name}@{release}" for release in UPGRADE_SOURCE_DATAPLANES})


def _agnhost_entry(ctx, binary) -> list:
    # agnhost netexec, served by localcp.podserve (it says why it stands in)
    return [sys.executable, "-m", "localcp.podserve"]


def _agnhost_env(ctx) -> dict:
    return {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}


# Settings of kube-proxy's configuration that keep it to its node's namespaces (as NODE_PRIVATE_FELIX for Felix).
NODE_PRIVATE_KUBE_PROXY = {
    ("conntrack", "maxPerCore"): (0, "kube-proxy would raise nf_conntrack's hash size in /sys/module, which is this "
                                     "whole machine's (0: leave the conntrack limits as they are)"),
}


def _kube_proxy_prepare(ctx, args) -> list:
    """kube-proxy reads ``--config`` (the DaemonSet's ConfigMap), which names a kubeconfig whose CA and token are the
    ServiceAccount's files at their in-pod paths: the pod runner's copies of both files are rewritten to the
    process's own paths (the ConfigMap in the cluster is left as it is), with NODE_PRIVATE_KUBE_PROXY applied."""
    notes = []
    conf = next((a.split("=", 1)[1] for a in args if a.startswith("--config=")), None)
    if not conf or not Path(conf).is_file():
        return [f"no --config file ({conf}): kube-proxy runs with its flags only"]
    cfg = yaml.safe_load(Path(conf).read_text()) or {}
    for (section, key), (value, why) in NODE_PRIVATE_KUBE_PROXY.items():
        cfg.setdefault(section, {})
        cfg[section][key] = value
        notes.append(f"node-private setting {section}.{key}={value} in this process's copy of --config: {why}")
    client = cfg.setdefault("clientConnection", {})
    kcfg_path = client.get("kubeconfig")
    if kcfg_path:
        local = Path(ctx.runner._translate(kcfg_path, ctx.mounts))
        if local.is_file():
            kcfg = yaml.safe_load(local.read_text()) or {}
            for entry in kcfg.get("clusters") or []:
                c = entry.get("cluster") or {}
                if c.get("certificate-authority"):
                    c["certificate-authority"] = ctx.runner._translate(c["certificate-authority"], ctx.mounts)
            for entry in kcfg.get("users") or []:
                u = entry.get("user") or {}
                for k in ("tokenFile", "client-certificate", "client-key"):
                    if u.get(k):
                        u[k] = ctx.runner._translate(u[k], ctx.mounts)
            local.write_text(yaml.safe_dump(kcfg))
            client["kubeconfig"] = str(local)
            servers = [(e.get("cluster") or {}).get("server") for e in kcfg.get("clusters") or []]
            notes.append(f"API server for this process: {', '.join(s for s in servers if s)} (the ConfigMap's "
                         "kubeconfig.conf; its CA and token paths point at this process's ServiceAccount files)")
    Path(conf).write_text(yaml.safe_dump(cfg))
    return notes


COMPONENTS = [
    Component("tigera-operator", "tigera/operator", {v: f"operator-{v}" for v in OPERATOR_VERSIONS},
              extra_args=_operator_args, extra_env=_operator_env),
    Component("calico-kube-controllers", "calico/kube-controllers", {CALICO_VERSION: "kube-controllers"},
              extra_args=_kube_controllers_args),
    Component("calico-apiserver", "calico/apiserver", {CALICO_VERSION: "apiserver"}, extra_args=_apiserver_args,
              exclusive=True, where_dataplane="pod"),
    Component("calico-node", "calico/node", _release_binaries("calico-node"), extra_env=_calico_node_env,
              where="node", entry=_calico_node_entry, probes=True),
    Component("calico-typha", "calico/typha", _release_binaries("calico-typha"), where="node", probes=True),
    # kube-proxy (iptables mode here: IPVS needs kernel support this machine's kernel lacks) behind the kubeadm
    # shape's DaemonSet; a binary of the control plane's own release (build.build_kube_proxy)
    Component("kube-proxy", "registry.k8s.io/kube-proxy", {KUBERNETES_VERSION: "kube-proxy"}, where="node",
              command_binary="kube-proxy", prepare=_kube_proxy_prepare),
    Component("agnhost", "e2e-test-images/agnhost", {"*": "python"}, extra_env=_agnhost_env, where="pod",
              entry=_agnhost_entry),
]


def probed_images(bins: dict) -> list:
    """Images (with the registries Calico's releases name) of the components whose readiness the runner probes and
    whose binary is built: kwok leaves their pods not Ready (dataplane.kwok_pod_stages)."""
    out = []
    for comp in COMPONENTS:
        if not comp.probes:
            continue
        for tag, key in comp._binaries.items():
            if tag != "*" and bins.get(key):
                out += [f"{registry}{comp.image}:{tag}" for registry in ("quay.io/", "docker.io/", "")]
    return out


def parse_image(image: str):
    """``quay.io/tigera/operator:v1.40.7`` -> ("tigera/operator", "v1.40.7"); no tag -> (repo, None)."""
    image = image.split("@", 1)[0]
    name, tag = image, None
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = image.rsplit(":", 1)
    parts = name.split("/")
    return "/".join(parts[-2:]), tag


def component_for(image: str):
    repo, tag = parse_image(image)
    for comp in COMPONENTS:
        if repo == comp.image:
            return comp, tag
    return None, tag


# -- environment and volumes, as a kubelet builds them -------------------------------------------------------

_VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\$")


def expand(value: str, env: dict) -> str:
    """Kubernetes' ``$(VAR)`` expansion: known variables are replaced, ``$$`` is a literal ``$``, unknown
    references stay as they are."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _VAR_REF.sub(sub, value or "")


def _field(pod: dict, path: str) -> str:
    meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
    m = re.match(r"metadata\.(labels|annotations)\['(.+)'\]$", path)
    if m:
        return (meta.get(m.group(1)) or {}).get(m.group(2), "")
    return {
        "metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"), "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"), "status.podIPs": status.get("podIP"),
    }.get(path) or ""


def _quantity(text: str) -> float:
    units = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
             "Ti": 2**40}
    m = re.match(r"^([0-9.]+)([a-zA-Z]*)$", str(text))
    if not m:
        return 0.0
    return float(m.group(1)) * units.get(m.group(2), 1)


class Context:
    """One container of one pod, being started."""

    def __init__(self, runner, pod, container, workdir):
        self.runner, self.pod, self.container, self.workdir = runner, pod, container, workdir
        self.kubeconfig = workdir / "kubeconfig"
        self.mounts = {}  # mountPath -> local path
        self.where = "host"
        self.notes = []  # what _start did that a kubelet would not (the process's log)


# -- the runner --------------------------------------------------------------------------------------------

class Proc:
    def __init__(self, key, comp, tag, pod, container):
        self.key, self.comp, self.tag = key, comp, tag
        self.where = comp.where  # comp.where_dataplane on a control plane with a data plane
        self.pod, self.container = pod, container
        self.popen = None
        self.restarts = 0
        self.started = 0.0
        self.next_start = 0.0
        self.backoff = 1.0
        self.binary = None
        self.problem = ""
        self.env = {}
        self.probe = None  # readiness: {"ready", "fails", "next", "busy", "last"} (PodRunner._probe_*)

    @property
    def label(self):
        m = self.pod["metadata"]
        return f"{m['namespace']}/{m['name']}/{self.container['name']}"


class PodRunner:
    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.state = json.loads((self.run_dir / "state.json").read_text())
        self.bins = self.state["bins"]
        self.pods_dir = self.run_dir / "pods"
        self.pods_dir.mkdir(exist_ok=True)
        self.procs: dict = {}
        self.networks: dict = {}  # pod uid -> its network (holder, addresses): pods marked for one
        self.orphaned: dict = {}  # node -> when its calico-node process stopped with its pod gone
        self.cni_setups: dict = {}  # node -> (calico-node pod uid, the CNI plugin's configuration)
        self._state_mtime = 0.0
        self.pods: dict = {}  # uid -> pod (pods with a container of a known component, or marked for a network)
        self.logs_objects: set = set()  # pod uids whose kwok Logs object was made (_ensure_logs_object)
        self.log_copies: dict = {}  # plain log -> (its CRI copy, the offset copied up to): _follow_logs
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.halt = threading.Event()
        from kubernetes import client, config
        self.api_client = config.new_client_from_config(config_file=str(self.run_dir / "podrunner.kubeconfig"))
        self.core = client.CoreV1Api(self.api_client)

    # API helpers -------------------------------------------------------------------------------------------

    def _get(self, kind, namespace, name):
        from kubernetes.client.exceptions import ApiException
        try:
            if kind == "ConfigMap":
                return self.api_client.sanitize_for_serialization(
                    self.core.read_namespaced_config_map(name, namespace))
            return self.api_client.sanitize_for_serialization(self.core.read_namespaced_secret(name, namespace))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def _data(self, kind, namespace, name) -> dict | None:
        obj = self._get(kind, namespace, name)
        if obj is None:
            return None
        if kind == "Secret":
            return {k: base64.b64decode(v).decode(errors="replace") for k, v in (obj.get("data") or {}).items()}
        return dict(obj.get("data") or {})

    def _bytes(self, kind, namespace, name) -> dict | None:
        obj = self._get(kind, namespace, name)
        if obj is None:
            return None
        if kind == "Secret":
            return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        out = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
        out.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
        return out

    def service_for(self, pod):
        """The Service of the pod's namespace whose selector matches the pod's labels."""
        labels = pod["metadata"].get("labels") or {}
        svcs = self.api_client.sanitize_for_serialization(
            self.core.list_namespaced_service(pod["metadata"]["namespace"]))
        for svc in svcs.get("items") or []:
            sel = svc["spec"].get("selector") or {}
            if sel and all(labels.get(k) == v for k, v in sel.items()) and svc["spec"].get("clusterIP") not in (
                    None, "", "None"):
                return svc
        return None

    def _token(self, pod) -> str:
        ns, sa = pod["metadata"]["namespace"], pod["spec"].get("serviceAccountName") or "default"
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": TOKEN_SECONDS,
                         "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
                                            "uid": pod["metadata"]["uid"]}}}
        out = self.core.create_namespaced_service_account_token(sa, ns, body)
        return out.status.token

    def _kubelet_env(self) -> dict:
        svc = self.api_client.sanitize_for_serialization(self.core.read_namespaced_service("kubernetes", "default"))
        ip, port = svc["spec"]["clusterIP"], str(svc["spec"]["ports"][0]["port"])
        return {"KUBERNETES_SERVICE_HOST": ip, "KUBERNETES_SERVICE_PORT": port,
                "KUBERNETES_SERVICE_PORT_HTTPS": port, "KUBERNETES_PORT": f"tcp://{ip}:{port}",
                f"KUBERNETES_PORT_{port}_TCP": f"tcp://{ip}:{port}", f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
                f"KUBERNETES_PORT_{port}_TCP_PORT": port, f"KUBERNETES_PORT_{port}_TCP_ADDR": ip}

    # building a process ---------------------------------------------------------------------------------------

    def _write_volumes(self, ctx: Context) -> None:
        pod, ns = ctx.pod, ctx.pod["metadata"]["namespace"]
        vols = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        root = ctx.workdir / "volumes"
        for mount in ctx.container.get("volumeMounts") or []:
            vol = vols.get(mount["name"])
            if vol is None:
                continue
            local = root / mount["name"]
            if not local.exists():
                local.mkdir(parents=True)
                self._fill_volume(vol, local, ctx, ns)
            target = local / mount["subPath"] if mount.get("subPath") else local
            ctx.mounts[mount["mountPath"].rstrip("/") or "/"] = target

    def _fill_volume(self, vol, local: Path, ctx, ns) -> None:
        def put(files: dict, items=None):
            if items:
                files = {i["path"]: files[i["key"]] for i in items if i["key"] in files}
            for rel, content in files.items():
                path = local / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content if isinstance(content, bytes) else str(content).encode())
                path.chmod(0o600)

        if "configMap" in vol or "secret" in vol:
            kind = "ConfigMap" if "configMap" in vol else "Secret"
            src = vol.get("configMap") or vol.get("secret")
            data = self._bytes(kind, ns, src.get("name") or src.get("secretName"))
            if data is not None:
                put(data, src.get("items"))
        elif "projected" in vol:
            for source in vol["projected"].get("sources") or []:
                if "serviceAccountToken" in source:
                    put({source["serviceAccountToken"]["path"]: self._token(ctx.pod)})
                elif "configMap" in source or "secret" in source:
                    kind = "ConfigMap" if "configMap" in source else "Secret"
                    src = source.get("configMap") or source.get("secret")
                    data = self._bytes(kind, ns, src["name"])
                    if data is not None:
                        put(data, src.get("items"))
                elif "downwardAPI" in source:
                    put({i["path"]: _field(ctx.pod, i["fieldRef"]["fieldPath"])
                         for i in source["downwardAPI"].get("items") or [] if "fieldRef" in i})
        elif "downwardAPI" in vol:
            put({i["path"]: _field(ctx.pod, i["fieldRef"]["fieldPath"])
                 for i in vol["downwardAPI"].get("items") or [] if "fieldRef" in i})
        # emptyDir and hostPath: an empty directory of the process's own (no host is shared here)

    SA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"

    def _service_account_volume(self, ctx: Context, token: str) -> None:
        """The ServiceAccount volume a kubelet mounts into every container (token, ca.crt, namespace)."""
        if self.SA_PATH in ctx.mounts or ctx.pod["spec"].get("automountServiceAccountToken") is False:
            return
        local = ctx.workdir / "volumes" / "kube-api-access"
        local.mkdir(parents=True, exist_ok=True)
        for name, content in (("token", token), ("ca.crt", Path(self.state["ca"]).read_text()),
                              ("namespace", ctx.pod["metadata"]["namespace"])):
            (local / name).write_text(content)
            (local / name).chmod(0o600)
        ctx.mounts[self.SA_PATH] = local

    def _translate(self, value: str, mounts: dict) -> str:
        for mount_path in sorted(mounts, key=len, reverse=True):
            if value == mount_path or value.startswith(mount_path + "/"):
                return str(mounts[mount_path]) + value[len(mount_path):]
            # flags such as --tls-cert-file=/path
            m = re.match(r"^(-{1,2}[A-Za-z0-9-]+=)(.*)$", value)
            if m and (m.group(2) == mount_path or m.group(2).startswith(mount_path + "/")):
                return m.group(1) + str(mounts[mount_path]) + m.group(2)[len(mount_path):]
        return value

    def _env(self, ctx: Context) -> dict:
        pod, ns, c = ctx.pod, ctx.pod["metadata"]["namespace"], ctx.container
        env = self._kubelet_env()
        for src in c.get("envFrom") or []:
            ref = src.get("configMapRef") or src.get("secretRef")
            kind = "ConfigMap" if "configMapRef" in src else "Secret"
            data = self._data(kind, ns, ref["name"])
            if data is None:
                if not ref.get("optional"):
                    raise RuntimeError(f"{kind} {ns}/{ref['name']} of envFrom not found (the kubelet would "
                                       "report CreateContainerConfigError)")
                continue
            prefix = src.get("prefix") or ""
            env.update({prefix + k: v for k, v in data.items()})
        for item in c.get("env") or []:
            name = item["name"]
            if "valueFrom" not in item:
                env[name] = expand(item.get("value") or "", env)
                continue
            vf = item["valueFrom"]
            if "fieldRef" in vf:
                env[name] = _field(pod, vf["fieldRef"]["fieldPath"])
            elif "configMapKeyRef" in vf or "secretKeyRef" in vf:
                ref = vf.get("configMapKeyRef") or vf.get("secretKeyRef")
                kind = "ConfigMap" if "configMapKeyRef" in vf else "Secret"
                data = self._data(kind, ns, ref["name"])
                if data is None or ref["key"] not in data:
                    if not ref.get("optional"):
                        raise RuntimeError(f"{kind} {ns}/{ref['name']} key {ref['key']} of env {name} not found")
                    continue
                env[name] = data[ref["key"]]
            elif "resourceFieldRef" in vf:
                rf = vf["resourceFieldRef"]
                kind, _, what = rf["resource"].partition(".")
                limit = ((c.get("resources") or {}).get(kind + "s") or {}).get(what)
                value = _quantity(limit) if limit else (2.0 if what == "cpu" else float(8 * 2**30))
                env[name] = str(int(math.ceil(value / _quantity(rf.get("divisor") or "1"))))
        return env

    def _start(self, proc: Proc) -> None:
        pod, c = proc.pod, proc.container
        meta = pod["metadata"]
        workdir = self.pods_dir / f"{meta['namespace']}_{meta['name']}_{c['name']}"
        if workdir.exists():
            shutil.rmtree(workdir / "volumes", ignore_errors=True)
        workdir.mkdir(parents=True, exist_ok=True)
        ctx = Context(self, pod, c, workdir)
        ctx.where = proc.where
        prefix = self._enter(proc)
        token = self._token(pod)
        self._write_volumes(ctx)
        self._service_account_volume(ctx, token)
        env = self._env(ctx)
        server = self.state["server"]
        if proc.where != "host":
            # in a node's or pod's namespaces 127.0.0.1 is the namespace's own: the API server is where the pod's
            # environment says, as rest.InClusterConfig reads it (KUBERNETES_SERVICE_HOST/PORT: the ConfigMap's
            # endpoint once the install wrote it, else the `kubernetes` Service's ClusterIP, which only a
            # kube-proxy or Calico's own BPF NAT would serve)
            server = f"https://{env['KUBERNETES_SERVICE_HOST']}:{env['KUBERNETES_SERVICE_PORT']}"
        cfg = {"apiVersion": "v1", "kind": "Config",
               "clusters": [{"name": "local", "cluster": {"server": server,
                                                          "certificate-authority": self.state["ca"]}}],
               "users": [{"name": "sa", "user": {"token": token}}],
               "contexts": [{"name": "local", "context": {"cluster": "local", "user": "sa",
                                                          "namespace": meta["namespace"]}}],
               "current-context": "local"}
        ctx.kubeconfig.write_text(yaml.safe_dump(cfg))
        ctx.kubeconfig.chmod(0o600)
        env.update(proc.comp.extra_env(ctx))
        env["KUBECONFIG"] = str(ctx.kubeconfig)
        env["HOSTNAME"] = meta["name"] if not pod["spec"].get("hostNetwork") else pod["spec"].get("nodeName", "")
        env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        env["HOME"] = str(workdir)
        env = {k: self._translate(v, ctx.mounts) for k, v in env.items()}
        command = c.get("command") or []
        run_args = list(c.get("args") or [])
        if command and proc.comp.command_binary and os.path.basename(command[0]) == proc.comp.command_binary:
            run_args = command[1:] + run_args
        args = [self._translate(expand(a, env), ctx.mounts) for a in run_args]
        ctx.notes += proc.comp.prepare(ctx, args)
        # the image's entrypoint is the binary (or the component's entry); a `command` beyond it (a shell wrapper)
        # is not run here
        entry = proc.comp.entry(ctx, proc.binary) if proc.comp.entry else [proc.binary]
        argv = prefix + entry + args + proc.comp.extra_args(ctx)
        plain = self.pods_dir / f"{meta['namespace']}_{meta['name']}_{c['name']}.log"
        logf = open(plain, "ab")
        logf.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} start #{proc.restarts} {proc.label}: "
                   f"{' '.join(argv)}\n".encode())
        for line in self._notes(proc, env) + ctx.notes:
            logf.write(f"==== {line}\n".encode())
        logf.flush()
        self._ensure_logs_object(pod)
        # the process writes into its log file itself (never through a pipe the runner would have to keep up with:
        # a component must not wait on the harness); the CRI copy follows the file (_follow_logs)
        with self.lock:
            self.log_copies[str(plain)] = (self._cri_log(meta, c["name"]), logf.tell())
        proc.popen = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      cwd=str(workdir), env=env, preexec_fn=_child_setup)
        logf.close()
        proc.started = time.monotonic()
        proc.env = env
        self._probe_reset(proc)
        log(f"started {proc.label} ({proc.comp.name} {proc.tag}) pid {proc.popen.pid}")

    # logs, as a kubelet's container runtime keeps them -------------------------------------------------------------

    def _cri_log(self, meta, container) -> Path:
        """The container's log in the CRI format a kubelet's runtime writes (what ``kubectl logs`` reads through
        kwok: see ``_ensure_logs_object``): the process's output only, not the runner's ``====`` lines."""
        return self.pods_dir / "cri" / f"{meta['namespace']}_{meta['name']}_{container}.log"

    def _ensure_logs_object(self, pod) -> None:
        """kwok serves ``GET .../pods/<pod>/log`` (kube-apiserver asks the node's kubelet endpoint, which is kwok's
        server) from the files a ``Logs`` object (kwok.x-k8s.io/v1alpha1) names: one per pod, owned by it (the garbage
        collector removes it with the pod), naming the CRI log of each of its containers. A container the runner does
        not run has no file: kwok answers that it has none."""
        meta = pod["metadata"]
        if meta["uid"] in self.logs_objects:
            return
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException
        (self.pods_dir / "cri").mkdir(exist_ok=True)
        names = [c["name"] for c in (pod["spec"].get("initContainers") or []) + pod["spec"]["containers"]]
        body = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                                  "uid": meta["uid"]}]},
                "spec": {"logs": [{"containers": [n], "logsFile": str(self._cri_log(meta, n))} for n in names]}}
        api = client.CustomObjectsApi(self.api_client)
        try:
            try:
                api.create_namespaced_custom_object("kwok.x-k8s.io", "v1alpha1", meta["namespace"], "logs", body)
            except ApiException as exc:
                if exc.status != 409:  # the Logs of an earlier pod of the same name: this pod's now
                    raise
                api.patch_namespaced_custom_object("kwok.x-k8s.io", "v1alpha1", meta["namespace"], "logs",
                                                   meta["name"], body)
            self.logs_objects.add(meta["uid"])
        except ApiException as exc:
            log(f"no Logs object for {meta['namespace']}/{meta['name']} (kubectl logs will not show it): "
                f"{exc.status} {exc.reason}")
            self.logs_objects.add(meta["uid"])

    def follow_logs(self) -> None:
        """Every half second, the lines the processes added to their logs since, appended to the CRI copies
        (``<RFC 3339 time> stdout F <line>``, a container runtime's format, which kwok's log server reads)."""
        from datetime import datetime, timezone
        while not self.halt.wait(0.5):
            with self.lock:
                copies = dict(self.log_copies)
            for plain, (cri, offset) in copies.items():
                try:
                    with open(plain, "rb") as f:
                        f.seek(offset)
                        data = f.read(4 << 20)
                    end = data.rfind(b"\n") + 1
                    if not end:
                        continue
                    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ").encode() + b" stdout F "
                    lines = data[:end].split(b"\n")[:-1]
                    with open(cri, "ab") as out:
                        out.write(b"".join(stamp + line + b"\n" for line in lines))
                except OSError:
                    continue  # the run directory went (the control plane stopped)
                with self.lock:
                    if self.log_copies.get(plain, (None,))[0] == cri:
                        self.log_copies[plain] = (cri, offset + end)

    # readiness, as a kubelet's prober workers ------------------------------------------------------------------

    def _probe_spec(self, proc):
        """The readinessProbe the runner runs for ``proc`` (components with ``probes``, in the data plane)."""
        if not proc.comp.probes or proc.where == "host":
            return None
        return proc.container.get("readinessProbe")

    def _probe_reset(self, proc) -> None:
        """A (re)started container is not ready until its probe succeeds (initialDelaySeconds after the start)."""
        spec = self._probe_spec(proc)
        if spec is None:
            proc.probe = None
            return
        proc.probe = {"ready": False, "fails": 0, "successes": 0, "busy": False, "last": "not probed yet",
                      "next": time.monotonic() + float(spec.get("initialDelaySeconds") or 0), "patched": None}
        self._enforce_ready(proc)

    def _probe_command(self, proc, spec) -> tuple:
        """argv and environment of one probe, run inside the process's namespaces (``_enter``)."""
        if "exec" in spec:
            cmd = list(spec["exec"].get("command") or [])
            if not cmd or os.path.basename(cmd[0]) != os.path.basename(proc.binary):
                raise RuntimeError(f"exec probe {cmd} does not run the image's binary: not run here")
            # BIRD is not run here (calico_node_image.py): its readiness is not asked for
            argv = [proc.binary] + [a for a in cmd[1:] if a != "-bird-ready"]
            return argv, dict(proc.env)
        if "httpGet" in spec:
            get = spec["httpGet"]
            host = get.get("host") or (proc.pod.get("status") or {}).get("podIP") or "127.0.0.1"
            port = get.get("port")
            if isinstance(port, str) and not port.isdigit():
                port = next((p["containerPort"] for p in proc.container.get("ports") or [] if p.get("name") == port),
                            port)
            url = f"{(get.get('scheme') or 'HTTP').lower()}://{host}:{port}{get.get('path') or '/'}"
            code = ("import ssl,sys,urllib.request\n"
                    "r=urllib.request.urlopen(sys.argv[1],timeout=float(sys.argv[2]),"
                    "context=ssl._create_unverified_context())\nsys.exit(0 if 200<=r.status<400 else 1)")
            return [sys.executable, "-c", code, url, str(spec.get("timeoutSeconds") or 1)], {"PATH": os.environ["PATH"]}
        raise RuntimeError(f"probe {sorted(spec)} not run here")

    def _probe_once(self, proc, p) -> None:
        spec = proc.container.get("readinessProbe") or {}
        timeout = float(spec.get("timeoutSeconds") or 1)
        try:
            argv, env = self._probe_command(proc, spec)
            out = subprocess.run(self._enter(proc) + argv, env=env, capture_output=True, text=True,
                                 timeout=timeout + 2, check=False)
            ok, detail = out.returncode == 0, (out.stdout + out.stderr).strip().replace("\n", " ")[-240:]
        except subprocess.TimeoutExpired:
            ok, detail = False, f"timed out after {timeout:.0f}s"
        except Exception as exc:  # noqa: BLE001 - a probe that cannot run fails, as a kubelet's would
            ok, detail = False, str(exc)
        if proc.probe is not p:
            return  # restarted meanwhile
        if ok:
            p["fails"], p["successes"] = 0, p["successes"] + 1
            if p["successes"] >= int(spec.get("successThreshold") or 1):
                p["ready"] = True
        else:
            p["successes"], p["fails"] = 0, p["fails"] + 1
            if p["fails"] >= int(spec.get("failureThreshold") or 3):
                p["ready"] = False
        p["last"] = ("ok" if ok else "failed") + (f": {detail}" if detail else "")
        p["next"] = time.monotonic() + float(spec.get("periodSeconds") or 10)
        p["busy"] = False
        self._enforce_ready(proc)

    def probe_loop(self) -> None:
        while not self.halt.is_set():
            now = time.monotonic()
            for proc in list(self.procs.values()):
                p = proc.probe
                if (p is None or p["busy"] or now < p["next"] or proc.popen is None
                        or proc.popen.poll() is not None):
                    continue
                p["busy"] = True
                threading.Thread(target=self._probe_once, args=(proc, p), daemon=True).start()
            self.halt.wait(0.5)

    def _enforce_ready(self, proc) -> None:
        """The pod's Ready and ContainersReady conditions (and the container's ``ready``) as the probe says: written
        when they differ, e.g. right after kwok marked the pod ready at once."""
        p = proc.probe
        if p is None:
            return
        alive = proc.popen is not None and proc.popen.poll() is None
        want = bool(p["ready"] and alive)
        with self.lock:
            pod = self.pods.get(proc.pod["metadata"]["uid"]) or proc.pod
        status = pod.get("status") or {}
        conds = [dict(c) for c in status.get("conditions") or []]
        ready = next((c for c in conds if c.get("type") == "Ready"), {})
        message = (f"containers with unready status: [{proc.container['name']}] "
                   f"(readiness probe: {p['last']})")[:1000]
        # kwok's stage marks a probed pod not Ready without a word; the kubelet says which container and why
        if ready.get("status") == ("True" if want else "False") and (want or ready.get("message") == message):
            return
        if p["patched"] and p["patched"][0] == want and time.monotonic() - p["patched"][1] < 1.0:
            return  # written a moment ago; the watch has not brought it back yet
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        value = "True" if want else "False"
        for kind in ("Ready", "ContainersReady"):
            cond = next((c for c in conds if c.get("type") == kind), None)
            if cond is None:
                cond = {"type": kind}
                conds.append(cond)
            if cond.get("status") != value:
                cond["lastTransitionTime"] = stamp
            cond["status"] = value
            if want:
                cond.pop("reason", None)
                cond.pop("message", None)
            else:
                cond["reason"] = "ContainersNotReady"
                cond["message"] = message
        statuses = [dict(c) for c in status.get("containerStatuses") or []]
        for cs in statuses:
            if cs.get("name") == proc.container["name"]:
                cs["ready"] = want
        body = {"status": {"conditions": conds}}
        if statuses:
            body["status"]["containerStatuses"] = statuses
        p["patched"] = (want, time.monotonic())
        meta = pod["metadata"]
        try:
            self.core.patch_namespaced_pod_status(meta["name"], meta["namespace"], body)
            log(f"{proc.label}: Ready={value} (readiness probe: {p['last'][:160]})")
        except Exception as exc:  # noqa: BLE001 - the pod may be gone; the next event tries again
            log(f"{proc.label}: could not set Ready={value}: {str(exc).splitlines()[0][:200] if str(exc) else exc}")

    # the data plane: nodes' holders and pods' networks -------------------------------------------------------------

    def dataplane_nodes(self) -> dict:
        """node name -> its namespaces (state.json ``dataplane``, written by ControlPlane as the nodes come)."""
        path = self.run_dir / "state.json"
        try:
            mtime = path.stat().st_mtime
            if mtime != self._state_mtime:
                self.state = json.loads(path.read_text())
                self._state_mtime = mtime
        except (OSError, ValueError):
            pass
        return (self.state.get("dataplane") or {}).get("nodes") or {}

    def _enter(self, proc) -> list:
        """The nsenter prefix of a process of the data plane (``[]`` for the control components)."""
        if proc.where == "host":
            return []
        node = proc.pod["spec"].get("nodeName")
        if proc.where == "node" or proc.pod["spec"].get("hostNetwork"):
            holder = (self.dataplane_nodes().get(node) or {}).get("holder")
            if not holder:
                raise RuntimeError(f"node {node} has no namespaces of its own")
            return dataplane.enter(holder)
        net = self.networks.get(proc.pod["metadata"]["uid"])
        if not net or not net.get("ips"):
            raise RuntimeError("the pod's network is not set up yet")
        return dataplane.enter(net["holder"].pid)

    def _notes(self, proc, env) -> list:
        """What this run does that a kubelet on a real host would not, one line each, in the process's log."""
        out = []
        if proc.comp.name == "calico-node":
            for key, (value, why) in NODE_PRIVATE_FELIX.items():
                out.append(f"node-private setting {key}={value}: {why}")
            inits = [i["name"] for i in proc.pod["spec"].get("initContainers") or []]
            if inits:
                out.append(f"init containers not run ({', '.join(inits)}): calico-node -init mounts bpffs and "
                           "cgroup2 through the host's PID 1 (/nodeproc/1), which would be this machine's - the "
                           "node's holder mounted its own bpffs; install-cni writes into the host's /etc/cni and "
                           "/opt/cni - the pod runner calls the CNI plugin with install-cni's configuration")
            out.append(f"API server for this process: {env.get('KUBERNETES_SERVICE_HOST')}:"
                       f"{env.get('KUBERNETES_SERVICE_PORT')} (KUBERNETES_SERVICE_HOST/PORT of its environment)")
        spec = self._probe_spec(proc)
        if spec is not None:
            what = spec.get("exec", {}).get("command") or spec.get("httpGet")
            out.append(f"readiness: the pod is Ready only while its readinessProbe ({what}, every "
                       f"{spec.get('periodSeconds') or 10}s) succeeds, run by the pod runner in these namespaces"
                       + (" without -bird-ready (BIRD is not run here)" if "-bird-ready" in str(what) else ""))
        return out

    def _desired_networks(self) -> dict:
        nodes = self.dataplane_nodes()
        out = {}
        with self.lock:
            pods = list(self.pods.values())
        for pod in pods:
            ann = pod["metadata"].get("annotations") or {}
            node = pod["spec"].get("nodeName")
            if (self._wants_network(pod, ann) and not pod["spec"].get("hostNetwork")
                    and node in nodes and not pod["metadata"].get("deletionTimestamp")
                    and (pod.get("status") or {}).get("phase") == "Running"):
                out[pod["metadata"]["uid"]] = pod
        return out

    @staticmethod
    def _wants_network(pod, ann) -> bool:
        """Marked by a test, or a pod of a component that runs in its pod's network on a data plane."""
        if ann.get(dataplane.NETWORK_ANNOTATION) == "true":
            return True
        comps = [component_for(c.get("image") or "")[0] for c in pod["spec"].get("containers") or []]
        return any(comp is not None and comp.where_dataplane == "pod" for comp in comps)

    def _cni_setup(self, pod) -> tuple:
        """(netconf, node holder pid, the CNI plugin's directory) for a pod on its node: install-cni's configuration
        of the calico-node pod that runs there, a kubeconfig for calico-cni-plugin, and the plugin of that pod's
        release (install-cni copies its own image's binaries onto the node)."""
        node = pod["spec"]["nodeName"]
        holder = self.dataplane_nodes()[node]["holder"]
        with self.lock:
            cnode = next((p for p in self.pods.values() if p["spec"].get("nodeName") == node
                          and not p["metadata"].get("deletionTimestamp")
                          and any(component_for(c.get("image") or "")[0] is not None
                                  and component_for(c.get("image") or "")[0].name == "calico-node"
                                  for c in p["spec"].get("containers") or [])), None)
        if cnode is None:
            raise RuntimeError(f"no calico-node pod on {node} yet (its install-cni gives the CNI configuration)")
        cached = self.cni_setups.get(node)
        if cached and cached[0] == cnode["metadata"]["uid"]:
            return cached[1], holder, cached[2]  # install-cni writes the configuration once per calico-node pod
        install = next((c for c in cnode["spec"].get("initContainers") or [] if c["name"] == "install-cni"), None)
        if install is None:
            raise RuntimeError(f"calico-node pod {cnode['metadata']['name']} has no install-cni container")
        workdir = self.pods_dir / f"cni_{node}"
        workdir.mkdir(parents=True, exist_ok=True)
        env = self._env(Context(self, cnode, install, workdir))
        template = env.get("CNI_NETWORK_CONFIG")
        if not template:
            raise RuntimeError(f"install-cni of {cnode['metadata']['name']} has no CNI_NETWORK_CONFIG")
        ns = cnode["metadata"]["namespace"]
        sa = env.get("CALICO_CNI_SERVICE_ACCOUNT") or "calico-cni-plugin"
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": TOKEN_SECONDS}}
        token = self.core.create_namespaced_service_account_token(sa, ns, body).status.token
        server = f"https://{env['KUBERNETES_SERVICE_HOST']}:{env['KUBERNETES_SERVICE_PORT']}"
        kubeconfig = workdir / "calico-kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": self.state["ca"]}}],
            "users": [{"name": "calico", "user": {"token": token}}],
            "contexts": [{"name": "calico-context", "context": {"cluster": "local", "user": "calico"}}],
            "current-context": "calico-context"}))
        kubeconfig.chmod(0o600)
        conf = podnet.netconf(template, env, node, str(kubeconfig))
        plugin = self.bins.get(_release_binaries("calico").get(parse_image(install.get("image") or "")[1], ""))
        if not plugin:
            raise RuntimeError(f"no Calico CNI plugin built for {install.get('image')} (install-cni of "
                               f"{cnode['metadata']['name']})")
        self.cni_setups[node] = (cnode["metadata"]["uid"], conf, str(Path(plugin).parent))
        return conf, holder, str(Path(plugin).parent)

    def _network_up(self, pod) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        net = self.networks.setdefault(uid, {"pod": pod, "holder": None, "ips": [], "problem": "", "next": 0.0,
                                             "backoff": 1.0})
        if net["ips"] or time.monotonic() < net["next"]:
            return
        try:
            conf, node_holder, cni_dir = self._cni_setup(pod)
            if net["holder"] is None or net["holder"].poll() is not None:
                resolv = self.pods_dir / f"{meta['namespace']}_{meta['name']}.resolv.conf"
                resolv.write_text(dataplane.RESOLV_CONF)
                logf = open(self.pods_dir / f"{meta['namespace']}_{meta['name']}.network.log", "ab")
                net["holder"] = subprocess.Popen(dataplane.pod_holder_command(meta["name"], str(resolv)),
                                                 stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                 preexec_fn=_child_setup)
                logf.close()
                deadline = time.monotonic() + 10
                log_path = self.pods_dir / f"{meta['namespace']}_{meta['name']}.network.log"
                while "ready" not in log_path.read_text(errors="replace"):
                    if net["holder"].poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"the pod's namespace holder did not start: {log_path.read_text()[-300:]}")
                    time.sleep(0.05)
            if not net.get("cni_ips"):
                net["container_id"] = uid.replace("-", "")
                net["netns"] = f"/proc/{net['holder'].pid}/ns/net"
                result = podnet.call("ADD", node_holder, cni_dir, conf, pod, net["netns"], net["container_id"])
                cni_ips = podnet.result_ips(result)
                if not cni_ips:
                    raise RuntimeError(f"CNI ADD of {meta['namespace']}/{meta['name']}: no address in the result")
                net.update(cni_ips=cni_ips, conf=conf, node_holder=node_holder, cni_dir=cni_dir,
                           interfaces=[i.get("name") for i in result.get("interfaces") or []])
            ips = net["cni_ips"]
            # what a kubelet reports: the sandbox's addresses (a merge patch: the lists replace kwok's address)
            self.core.patch_namespaced_pod_status(
                meta["name"], meta["namespace"], {"status": {"podIP": ips[0], "podIPs": [{"ip": ip} for ip in ips]}},
                _content_type="application/merge-patch+json")
            net.update(ips=ips, problem="")
            log(f"network of {meta['namespace']}/{meta['name']}: {', '.join(ips)} (Calico CNI, node "
                f"{pod['spec']['nodeName']})")
        except Exception as exc:  # noqa: BLE001 - as a kubelet: report, retry with back-off
            net["problem"] = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            net["next"] = time.monotonic() + net["backoff"]
            net["backoff"] = min(net["backoff"] * 2, BACKOFF_MAX)
            log(f"network of {meta['namespace']}/{meta['name']}: {net['problem']}")

    def _network_down(self, uid) -> None:
        net = self.networks.pop(uid)
        meta = net["pod"]["metadata"]
        if net.get("cni_ips") and net["holder"] is not None and net["holder"].poll() is None:
            try:
                podnet.call("DEL", net["node_holder"], net["cni_dir"], net["conf"],
                            net["pod"], net["netns"], net["container_id"], timeout=30)
            except Exception as exc:  # noqa: BLE001 - the namespace goes anyway; IPAM's GC frees the address
                log(f"network of {meta['namespace']}/{meta['name']}: {exc}")
        _stop(net["holder"])
        log(f"network of {meta['namespace']}/{meta['name']} removed")

    def reconcile_networks(self) -> None:
        desired = self._desired_networks()
        for uid in list(self.networks):
            if uid not in desired:
                self._network_down(uid)
        for uid, pod in desired.items():
            self._network_up(pod)

    # reconciling ------------------------------------------------------------------------------------------------

    def _desired(self) -> dict:
        out = {}
        with self.lock:
            pods = list(self.pods.values())
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp") or not pod["spec"].get("nodeName"):
                continue
            if (pod.get("status") or {}).get("phase") not in ("Running",):
                continue
            for c in pod["spec"].get("containers") or []:
                comp, tag = component_for(c.get("image") or "")
                if comp is not None:
                    out[(pod["metadata"]["uid"], c["name"])] = (comp, tag, pod, c)
        return out

    def _detach_orphaned_nodes(self, desired) -> None:
        """A node whose calico-node pod went (uninstall, DaemonSet deleted) and got no new one within
        ``DETACH_AFTER`` seconds: its BPF programs and maps are removed (dataplane.DETACH_PROGRAMS in the node's
        namespaces: ``calico-bpf cleanup`` left the TCX links and the pins in place here). Felix leaves them attached when it stops, so that a restart or a rolling update keeps traffic
        flowing, as on a real node; left alone with their maps no longer kept, they would drop the node's traffic."""
        with_node = {pod["spec"].get("nodeName") for comp, _tag, pod, _c in desired.values()
                     if comp.name == "calico-node"}
        now = time.monotonic()
        for node in list(self.orphaned):
            if node in with_node:
                self.orphaned.pop(node)
            elif now - self.orphaned[node] > DETACH_AFTER:
                self.orphaned.pop(node)
                holder = (self.dataplane_nodes().get(node) or {}).get("holder")
                if not holder:
                    continue
                proc = subprocess.run(dataplane.enter(holder) + ["sh", "-c", dataplane.DETACH_PROGRAMS],
                                      capture_output=True, text=True, timeout=60, check=False)
                log(f"node {node}: no calico-node pod for {DETACH_AFTER:.0f}s - its BPF programs and maps removed "
                    f"(rc {proc.returncode} {proc.stderr.strip()[-200:]})")

    def reconcile(self) -> None:
        self.reconcile_networks()
        desired = self._desired()
        for key in list(self.procs):
            if key not in desired:
                proc = self.procs.pop(key)
                _stop(proc.popen)
                log(f"stopped {proc.label} (its pod is gone or terminating)")
                if proc.comp.name == "calico-node" and proc.binary and proc.where == "node":
                    self.orphaned[proc.pod["spec"].get("nodeName")] = time.monotonic()
        self._detach_orphaned_nodes(desired)
        now = time.monotonic()
        for key, (comp, tag, pod, c) in desired.items():
            proc = self.procs.get(key)
            if proc is None:
                proc = self.procs[key] = Proc(key, comp, tag, pod, c)
                proc.binary = comp.binary(self.bins, tag)
                if not proc.binary:
                    built = sorted(t for t in comp._binaries if self.bins.get(comp._binaries[t]))
                    proc.problem = (f"no {comp.name} binary for {tag} in the cache (built here: "
                                    f"{', '.join(built) or 'none'}): the pod runs with no process behind it")
                    log(f"{proc.label}: {proc.problem}")
                elif self.dataplane_nodes():
                    proc.where = comp.where_dataplane
                if proc.where != "host" and pod["spec"].get("nodeName") not in self.dataplane_nodes():
                    proc.binary = None
                    proc.problem = ("kwok-only: this control plane has no node network (localcp up --dataplane "
                                    "gives nodes namespaces of their own, where the real process runs)")
                    log(f"{proc.label}: {proc.problem}")
            if not proc.binary:
                continue
            proc.pod = pod  # latest status, for fieldRefs of a restart
            if proc.popen is not None and proc.popen.poll() is None:
                if now - proc.started > 30:
                    proc.backoff = 1.0
                self._enforce_ready(proc)
                continue
            if proc.popen is not None and proc.next_start == 0.0:
                self._enforce_ready(proc)  # a container that exited is not ready
                rc = proc.popen.returncode
                proc.restarts += 1
                proc.next_start = now + proc.backoff
                log(f"{proc.label} exited with {rc}; starting it again in {proc.backoff:.0f}s "
                    f"(restart {proc.restarts})")
                proc.backoff = min(proc.backoff * 2, BACKOFF_MAX)
                continue
            if now < proc.next_start:
                continue
            if proc.comp.exclusive and proc.where == "host":
                other = next((o for o in self.procs.values() if o is not proc and o.comp is proc.comp
                              and o.popen is not None and o.popen.poll() is None
                              and o.pod["metadata"]["namespace"] == pod["metadata"]["namespace"]), None)
                if other is not None:
                    proc.problem = (f"standby: {other.label} serves at the Service's ClusterIP:port, which one "
                                    "process can bind (a second replica's endpoint is simulated by kwok)")
                    proc.popen, proc.next_start = None, 0.0
                    continue
            try:
                self._start(proc)
                proc.problem = ""
            except Exception as exc:  # noqa: BLE001 - as a kubelet: report, retry with back-off
                proc.problem = f"cannot start: {exc}"
                log(f"{proc.label}: {proc.problem}")
                proc.popen = None
                proc.next_start = now + proc.backoff
                proc.backoff = min(proc.backoff * 2, BACKOFF_MAX)
                continue
            proc.next_start = 0.0
        self._write_status()

    def _write_status(self) -> None:
        out = []
        for proc in self.procs.values():
            m = proc.pod["metadata"]
            out.append({"component": proc.comp.name, "version": proc.tag, "namespace": m["namespace"],
                        "pod": m["name"], "pod_uid": m["uid"], "container": proc.container["name"],
                        "binary": proc.binary, "restarts": proc.restarts, "problem": proc.problem,
                        "where": proc.where, "node": proc.pod["spec"].get("nodeName"),
                        "pid": proc.popen.pid if proc.popen is not None and proc.popen.poll() is None else None,
                        "log": str(self.pods_dir / f"{m['namespace']}_{m['name']}_{proc.container['name']}.log")})
        tmp = self.pods_dir / "processes.json.tmp"
        tmp.write_text(json.dumps(out, indent=1))
        os.replace(tmp, self.pods_dir / "processes.json")
        nets = []
        for uid, net in self.networks.items():
            m = net["pod"]["metadata"]
            nets.append({"namespace": m["namespace"], "pod": m["name"], "pod_uid": uid,
                         "node": net["pod"]["spec"].get("nodeName"), "ips": net["ips"],
                         "interfaces": net.get("interfaces") or [], "problem": net["problem"],
                         "holder": net["holder"].pid if net["holder"] is not None and net["holder"].poll() is None
                         else None})
        tmp = self.pods_dir / "networks.json.tmp"
        tmp.write_text(json.dumps(nets, indent=1))
        os.replace(tmp, self.pods_dir / "networks.json")

    # watching pods ------------------------------------------------------------------------------------------

    @staticmethod
    def _relevant(pod: dict) -> bool:
        if ((pod["metadata"].get("annotations") or {}).get(dataplane.NETWORK_ANNOTATION)) == "true":
            return True
        return any(component_for(c.get("image") or "")[0] is not None for c in pod["spec"].get("containers") or [])

    def watch(self) -> None:
        from kubernetes import watch
        while not self.halt.is_set():
            try:
                listing = self.core.list_pod_for_all_namespaces(limit=500)
                pods = {}
                items = list(listing.items)
                cont = listing.metadata._continue
                while cont:
                    page = self.core.list_pod_for_all_namespaces(limit=500, _continue=cont)
                    items += page.items
                    cont = page.metadata._continue
                for p in items:
                    d = self.api_client.sanitize_for_serialization(p)
                    if self._relevant(d):
                        pods[d["metadata"]["uid"]] = d
                with self.lock:
                    self.pods = pods
                self.wake.set()
                rv = listing.metadata.resource_version
                w = watch.Watch()
                for ev in w.stream(self.core.list_pod_for_all_namespaces, resource_version=rv,
                                   timeout_seconds=120, allow_watch_bookmarks=False):
                    if self.halt.is_set():
                        w.stop()
                        break
                    d = self.api_client.sanitize_for_serialization(ev["object"])
                    uid = (d.get("metadata") or {}).get("uid")
                    if not uid or not self._relevant(d):
                        continue
                    with self.lock:
                        if ev["type"] == "DELETED":
                            self.pods.pop(uid, None)
                        else:
                            self.pods[uid] = d
                    self.wake.set()
            except Exception as exc:  # noqa: BLE001 - the API server may be down (fault tests): list again
                log(f"watch: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
                self.halt.wait(1.0)

    def run(self) -> None:
        threading.Thread(target=self.watch, daemon=True).start()
        threading.Thread(target=self.probe_loop, daemon=True).start()
        threading.Thread(target=self.follow_logs, daemon=True).start()
        log(f"running; components {[c.name for c in COMPONENTS]}")
        while not self.halt.is_set():
            try:
                self.reconcile()
            except Exception as exc:  # noqa: BLE001 - keep supervising
                log(f"reconcile: {type(exc).__name__}: {exc}")
            self.wake.wait(1.0)
            self.wake.clear()
        for proc in self.procs.values():
            _stop(proc.popen)
        for net in self.networks.values():  # the nodes' namespaces go next (ControlPlane.stop): no CNI DEL
            _stop(net["holder"])
        self._write_status()


def _child_setup():
    os.setsid()
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # die with the runner
    except OSError:
        pass


def _stop(popen, grace: float = 10.0) -> None:
    if popen is None or popen.poll() is not None:
        return
    try:
        os.killpg(popen.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        popen.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        popen.wait(timeout=5)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="localcp.podrunner", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", required=True)
    args = parser.parse_args(argv)
    runner = PodRunner(Path(args.run_dir))

    def on_term(*_):
        runner.halt.set()
        runner.wake.set()
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    runner.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
