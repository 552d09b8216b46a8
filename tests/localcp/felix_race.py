"""Felix's open bug projectcalico/calico#11016, as the test harness meets it, and the harness's way past it.

When Felix switches between iptables and eBPF it recreates the VXLAN device (``"vxlan.calico" exists with
incompatible configuration: vni: 0 vs 4096; recreating device``: flow-based on eBPF, VNI 4096 on iptables), so the
old device (say ifIndex 30) is deleted and a new one (ifIndex 47) created within a millisecond. Felix's interface
monitor (felix/ifacemonitor/update_filter.go) holds every "down" or deletion update of an interface for 100 ms (flap
damping) in a queue per ifIndex, and sends the queues that are due in Go's map order. When its timer pops late
enough for both queues to be due at once - a busy machine, like this one with the integration pool on two cores -
the new device's "up" can be sent before the old one's deletion. Felix's data plane tracks interfaces by name, so its
last word on ``vxlan.calico`` is then "gone" while the new device is up: it never attaches its programs to it, and
pod traffic between nodes through that node stops, until that Felix restarts. Its periodic resync does not help: the
monitor's own state for ifIndex 47 never changed.

Seen three times in about 35 switches of test runs on 2026-11-29: twice in the collection's enable_ebpf (whose
connectivity check failed naming the pairs, as it should; once on both nodes at the same moment) and once in the
documented order done by hand. The collection does not restart
calico-node on its own; the harness does what an operator would: it finds the node whose Felix log ends with the
device gone while a newer copy is up (``lost_device``), deletes that node's calico-node pod (``heal``), and the test
that met it says so. Every use prints what it found.
"""

import datetime
import json
import re
import time
from pathlib import Path

DEVICE = "vxlan.calico"
ISSUE = "projectcalico/calico#11016"

# Felix's own lines: the calico-node container's other processes (monitor-addresses, allocate-tunnel-addrs,
# status-reporter, ...) write to the same log with their own pids, and the last line may be theirs
_FELIX = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) \[(\w+)\]\[(\d+)\] felix/")
_STATE = re.compile(r'Linux interface state changed\. ifIndex=(\d+) ifaceName="([^"]+)" state="([^"]*)"')
_RECREATE = re.compile(r'"([^"]+)" exists with incompatible configuration: .*recreating device')


def _epoch(stamp: str) -> float:
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def lost_device(text: str, device: str = DEVICE, since: float | None = None) -> dict | None:
    """Whether the last Felix process of a calico-node log lost ``device`` the way of Calico issue 11016: it
    recreated the device, and its last state line for the name says gone ("") while another ifIndex it saw come up
    since is still there. ``since`` (epoch seconds): only a loss logged at or after it. Returns {pid, at (epoch),
    gone (ifIndex), present (ifIndexes)} or None."""
    last_pid, views = None, {}
    for line in text.splitlines():
        m = _FELIX.match(line)
        if not m:
            continue
        stamp, _level, pid = m.groups()
        last_pid = pid
        view = views.setdefault(pid, {"recreated": False, "present": {}, "last": None})
        r = _RECREATE.search(line)
        if r and r.group(1) == device:
            view["recreated"] = True
            continue
        s = _STATE.search(line)
        if not s or s.group(2) != device:
            continue
        index, state = int(s.group(1)), s.group(3)
        if state:
            view["present"][index] = state
        else:
            view["present"].pop(index, None)
        view["last"] = (_epoch(stamp), index, state)
    view = views.get(last_pid)
    if not view or not view["recreated"] or not view["last"] or view["last"][2] != "" or not view["present"]:
        return None
    at, gone, _state = view["last"]
    if since is not None and at < since:
        return None
    return {"pid": int(last_pid), "at": at, "gone": gone, "present": sorted(view["present"])}


def lost_on_nodes(cluster, since: float | None = None) -> dict:
    """{node: what ``lost_device`` found} for the calico-node processes the pod runner runs now."""
    found = {}
    for p in cluster.processes("calico-node"):
        if not p.get("pid") or not p.get("log"):
            continue
        try:
            text = Path(p["log"]).read_text(errors="replace")
        except OSError:
            continue
        lost = lost_device(text, since=since)
        if lost:
            found[p["node"]] = dict(lost, pod=p.get("pod"))
    return found


def describe(found: dict) -> str:
    return "; ".join(
        f"Felix on {node} (pid {f['pid']}) lost {DEVICE}: ifIndex {f['gone']}'s deletion handled after ifIndex "
        f"{', '.join(map(str, f['present']))} came up, at {time.strftime('%H:%M:%S', time.gmtime(f['at']))} UTC"
        for node, f in sorted(found.items())) + f" ({ISSUE})"


def heal(cluster, found: dict, timeout: float = 300) -> None:
    """What an operator does about it: delete the calico-node pod of each node named (its DaemonSet starts a new
    one, whose Felix reads the devices afresh), then wait until each node runs a new calico-node whose Felix
    reports ready."""
    from . import switches  # (its readiness check; switches imports this module)
    pods = json.loads(cluster.kubectl("get", "pods", "-n", "calico-system", "-l", "k8s-app=calico-node",
                                      "-o", "json").stdout)["items"]
    old = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node in found:
            old[node] = pod["metadata"]["name"]
            cluster.kubectl("delete", "pod", "-n", "calico-system", pod["metadata"]["name"], "--wait=false")
    print(f"[harness] {describe(found)}: deleted calico-node pod(s) {sorted(old.values())}", flush=True)

    def renewed():
        now = {p["node"]: p for p in cluster.processes("calico-node") if p.get("pid")}
        return all(node in now and now[node].get("pod") != old[node] and switches.felix_ready(cluster, node)
                   for node in old)
    cluster.wait_for(renewed, timeout=timeout, interval=3,
                     what=f"a new calico-node with Felix ready on {', '.join(sorted(old))}")
