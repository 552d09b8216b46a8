"""Nodes and pods with a network: what the real calico-node needs from a host, made on this machine.

``localcp up --dataplane`` (the demo and the data-plane tests) gives every kwok node what a real node has:

* **a network namespace** ``cops<N>-n<i>`` with ``eth0`` at ``10.250.<N>.<4i+2>/30``, its default route through
  the *router*: the kubeadm shape's namespace ``calico-ops-<N>`` (shapes.py), which forwards between the nodes'
  /30 links and the host's ``10.250.<N>.1`` where the API server answers (the forwarder of the kubeadm shape).
  Every node is in a subnet of its own, so Calico's default ``VXLANCrossSubnet`` pool encapsulates all traffic
  between nodes (BGP, which would route inside one subnet, needs BIRD: not in Calico's Go build, not run here);
* that address as the Node's ``InternalIP`` (kwok keeps the addresses a Node has), so host-network pods
  (calico-node, Typha) get it as their pod IP and Typha's EndpointSlice is valid;
* **a holder** per node: a process in the node's network namespace with a UTS namespace of its own (hostname =
  node name: Felix takes the hostname) and a private mount namespace with its own bpffs on ``/sys/fs/bpf``, the
  machine's cgroup v2 read-only on ``/sys/fs/cgroup`` (where a host has it; Felix attaches nothing there: the pod
  runner turns connect-time load balancing off, podrunner.py NODE_PRIVATE_FELIX), a
  tmpfs on ``/run`` and on ``/var`` (``/var/run`` -> ``/run``; ``/var/lib/calico``, ``/var/log/calico``: what
  calico-node writes on a host stays on the node) and a resolv.conf of the node's own on ``/etc/resolv.conf``
  naming only the namespace's loopback (no DNS query leaves the namespaces; Felix's lookups fail fast). The
  processes of the node's pods enter the holder's namespaces (``nsenter``), so a process that exits and is
  started again finds the node as it left it, and the BPF programs stay pinned while it restarts.

Pods that a test marks (annotation ``localcp.calico-ops/network: "true"``) get a holder of their own with a new
network namespace; the pod runner wires it with Calico's CNI plugin (podrunner.py).

Tear-down (``ControlPlane.stop``): the processes by PID, then each node's namespace is deleted, which removes its
interfaces and with them every qdisc, TCX link and route Felix put there; the router namespace goes with the
kubeadm shape. Needs root with CAP_NET_ADMIN, CAP_SYS_ADMIN and CAP_BPF (CI and developers' machines here).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import shapes

NETWORK_ANNOTATION = "localcp.calico-ops/network"
MAX_NODES = 62  # /30 links in 10.250.N.0/24 after the host's
ROUTER_IFINDEX = 40000  # + the node's index: the router's end of each node's link (create_node says why)

# The only nameserver a node or pod namespace knows is its own loopback, where nothing answers: a lookup fails at
# once and no query leaves the namespaces the harness made (a real node would name the cluster's DNS).
RESOLV_CONF = ("# localcp data plane: DNS stays inside this namespace (nothing listens here; lookups fail fast)\n"
               "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")

# The holder of a node: hostname, its own bpffs, /run and /var as a node has them, its own resolv.conf; then it
# waits. `ip netns exec` already gives a private mount namespace with the namespace's /sys.
NODE_HOLDER = r"""set -e
hostname "$1"
mount -t bpf bpffs /sys/fs/bpf
mount -t cgroup2 -o ro cgroup2 /sys/fs/cgroup
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=0755 tmpfs /var
ln -s /run /var/run
mkdir -p /var/lib/calico /var/log/calico/cni /var/tmp /run/calico
mount --bind "$2" /etc/resolv.conf
echo "holder of node $1 ready"
exec sleep infinity
"""

POD_HOLDER = r"""set -e
hostname "$1"
ip link set lo up
mount --bind "$2" /etc/resolv.conf
echo "holder of pod $1 ready"
exec sleep infinity
"""


# What takes a node's BPF programs away, run in its namespaces: tc clsact qdiscs (programs attached with tc) off
# every interface, then the pins of the node's own bpffs - TCX links, programs and maps - unlinked (with no process
# holding them, the kernel detaches and frees them).
DETACH_PROGRAMS = r"""for dev in $(ls /sys/class/net); do tc qdisc del dev "$dev" clsact 2>/dev/null; done
find /sys/fs/bpf -mindepth 1 -depth ! -name '*.debug' -delete
"""  # maps.debug and progs.debug are the kernel's own (bpffs' preloaded iterators), in every bpffs


def _ip(*args, check=True):
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def node_net(octet: int, index: int) -> dict:
    """Names and addresses of node ``index`` (1-based) on the node network of service octet N."""
    if not 1 <= index <= MAX_NODES:
        raise ValueError(f"node index {index}: the data plane has room for {MAX_NODES} nodes")
    return {"netns": f"cops{octet}-n{index}", "router_if": f"c{octet}r{index}", "tmp_if": f"c{octet}n{index}",
            "address": f"10.250.{octet}.{4 * index + 2}", "gateway": f"10.250.{octet}.{4 * index + 1}",
            "prefix": 30, "subnet": f"10.250.{octet}.{4 * index}/30"}


def create_router(octet: int) -> None:
    """The kubeadm shape's namespace forwards between the nodes and the host; the host routes the nodes' /24
    through it (the route goes with the host's link)."""
    net = shapes.node_network(octet)
    _ip("netns", "exec", net["netns"], "sysctl", "-qw", "net.ipv4.ip_forward=1")
    _ip("route", "replace", f"10.250.{octet}.0/24", "via", net["peer"], "dev", net["host_if"])


def service_range(octet: int) -> str:
    """The Service range of a control plane with a data plane: ``10.251.<N>.0/24``."""
    return f"10.251.{octet}.0/24"


def service_ip(octet: int, host: int) -> str:
    return f"10.251.{octet}.{host}"


def route_services(octet: int, node: dict) -> None:
    """Traffic from this machine (kube-apiserver dialing an APIService's Service, a test's client outside the
    cluster) to a ClusterIP goes through the router to the first node, whose eBPF programs translate it as they do
    for any packet that enters a node for a Service (Calico's BPF NAT; the answer comes back the same way).
    Before Felix runs there, nothing answers, as on a cluster with no kube-proxy and no Calico yet."""
    net = shapes.node_network(octet)
    _ip("route", "replace", service_range(octet), "via", net["peer"], "dev", net["host_if"])
    _ip("-n", net["netns"], "route", "replace", service_range(octet), "via", node["address"])


def create_node(octet: int, index: int, run_dir: Path, name: str) -> dict:
    """The node's network namespace, its link to the router, and its resolv.conf; the holder is started by the
    caller (``holder_command``) so that it is one of the control plane's processes."""
    net = node_net(octet, index)
    router = shapes.node_network(octet)["netns"]
    delete_node(octet, index)
    _ip("netns", "add", net["netns"])
    # the router's end gets an interface index no node ever uses (ROUTER_IFINDEX): the node's eth0 is a veth, whose
    # IFLA_LINK is its peer's index in the router's namespace, and Felix in eBPF mode (bpf_ep_mgr.go, addIface) takes
    # a link's ParentIndex for an interface *of its own namespace* below it in a tree. With the kernel's next free
    # index the peer was 7 and so was node-3's vxlan.calico: Felix took vxlan.calico for a leaf of eth0, attached
    # XDP only and no tc program, and every packet between node-3's pods and the other nodes was lost (found by
    # the connectivity role's check, pod to pod node-3 <-> node-1 and node-2). A Kubernetes node in a container
    # (kind) has the same veth: not this collection's to fix, only the harness's to avoid.
    _ip("-n", router, "link", "add", net["router_if"], "index", str(ROUTER_IFINDEX + index), "type", "veth",
        "peer", "name", net["tmp_if"])
    _ip("-n", router, "link", "set", net["tmp_if"], "netns", net["netns"])
    _ip("-n", net["netns"], "link", "set", net["tmp_if"], "name", "eth0")
    _ip("-n", router, "addr", "add", f"{net['gateway']}/30", "dev", net["router_if"])
    _ip("-n", router, "link", "set", net["router_if"], "up")
    _ip("-n", net["netns"], "addr", "add", f"{net['address']}/30", "dev", "eth0")
    _ip("-n", net["netns"], "link", "set", "eth0", "up")
    _ip("-n", net["netns"], "link", "set", "lo", "up")
    _ip("-n", net["netns"], "route", "add", "default", "via", net["gateway"])
    # a node forwards for its pods (kubelet and container runtimes set it on a real host)
    _ip("netns", "exec", net["netns"], "sysctl", "-qw", "net.ipv4.ip_forward=1")
    folder = Path(run_dir) / "nodes" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "resolv.conf").write_text(RESOLV_CONF)
    return dict(net, name=name, index=index, dir=str(folder), resolv=str(folder / "resolv.conf"))


def holder_command(node: dict) -> list:
    return ["ip", "netns", "exec", node["netns"], "unshare", "--mount", "--uts", "--propagation", "private",
            "--", "sh", "-c", NODE_HOLDER, "node-holder", node["name"], node["resolv"]]


def pod_holder_command(hostname: str, resolv: str) -> list:
    return ["unshare", "--net", "--uts", "--mount", "--propagation", "private", "--", "sh", "-c", POD_HOLDER,
            "pod-holder", hostname[:63], resolv]


def enter(pid: int, net: bool = True, mount: bool = True, uts: bool = True) -> list:
    """The prefix that runs a command in a holder's namespaces."""
    return ["nsenter", "-t", str(pid)] + (["-n"] if net else []) + (["-m"] if mount else []) + (
        ["-u"] if uts else []) + ["--"]


def delete_node(octet: int, index: int) -> None:
    net = node_net(octet, index)
    # deleting the namespace deletes eth0, its peer in the router, and every qdisc, BPF link and route on them
    _ip("netns", "del", net["netns"], check=False)


def delete_netns(name: str) -> None:
    _ip("netns", "del", name, check=False)


def leftover_nodes(octet: int) -> list:
    """Node namespaces of this octet that still exist (tear-down checks)."""
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"cops{octet}-n")]


# -- readiness that waits for the real process --------------------------------------------------------------------
# kwok's pod-ready stage marks every pod Ready the moment it is scheduled. For the data plane's own pods that is
# wrong in a way the switches under traffic see: a DaemonSet's rolling update counts the new pod available at once
# and replaces the next node's calico-node before the first one's Felix serves (all nodes switched together, not
# one after another). So on a control plane with a data plane kwok runs with its default pod stages plus one: pods
# whose first container is an image the pod runner runs and probes (podrunner.COMPONENTS ``probes``) come up Running
# but not Ready; the pod runner sets Ready from the container's readinessProbe (podrunner.PodRunner._enforce_ready).
# The stages are kwok's own fast pod stages, read from its module in the Go module cache (where building kwok put
# it) and changed here, not copied into this repository.

def kwok_pod_stages(kwok_module_dir: Path, probed_images: list) -> str | None:
    """kwok's fast pod stages with ``pod-ready`` split in two by the first container's image; None when the
    module's stage files are not found (kwok then runs with its defaults and the runner corrects Ready after it)."""
    import yaml
    stage_dir = Path(kwok_module_dir) / "kustomize" / "stage" / "pod" / "fast"
    try:
        ready, complete, delete = (yaml.safe_load((stage_dir / f"pod-{n}.yaml").read_text())
                                   for n in ("ready", "complete", "delete"))
    except (OSError, yaml.YAMLError):
        return None
    template = ready["spec"]["next"]["statusTemplate"]
    probed_template = template
    for kind in ("Ready", "ContainersReady"):
        probed_template = probed_template.replace(f'status: "True"\n  type: {kind}\n',
                                                  f'status: "False"\n  type: {kind}\n')
    start = probed_template.find("containerStatuses:")
    end = probed_template.find("initContainerStatuses:")
    if start < 0 or end < 0 or probed_template.count('status: "False"') != 2:
        return None  # kwok's template changed shape: leave its defaults
    probed_template = (probed_template[:start] + probed_template[start:end].replace("ready: true", "ready: false")
                       + probed_template[end:])
    key = ".spec.containers[0].image"
    ready["spec"]["selector"]["matchExpressions"].append({"key": key, "operator": "NotIn", "values": probed_images})
    probed = yaml.safe_load(yaml.safe_dump(ready))
    probed["metadata"]["name"] = "pod-ready-probed"
    probed["spec"]["selector"]["matchExpressions"][-1]["operator"] = "In"
    probed["spec"]["next"]["statusTemplate"] = probed_template
    return yaml.safe_dump_all([ready, probed, complete, delete], sort_keys=False)
