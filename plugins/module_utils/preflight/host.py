# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: gather the few host facts the eBPF preflight needs, by reading files (nothing is changed).

Read: the kernel release (``/proc/sys/kernel/osrelease``), ``/etc/os-release``, ``/proc/mounts`` (bpffs at
``/sys/fs/bpf``, cgroup2), ``/proc/filesystems`` (bpf and cgroup2 mountable), the vxlan module
(``/sys/module/vxlan``, else ``/lib/modules/<kernel>/modules.builtin``/``modules.dep``), and tagged VLAN
devices (``DEVTYPE=vlan`` in ``/sys/class/net/*/uevent``). Every path is under ``root`` so tests can use a
fake tree. Judging is ``node_rules.judge_host``'s job.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import platform

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import node_rules


def _read(root, path):
    try:
        with open(os.path.join(root, path.lstrip("/")), "r") as f:
            return f.read()
    except (IOError, OSError):
        return None


def _mounts(text):
    """``[(mount point, fs type)]`` of /proc/mounts."""
    out = []
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) >= 3:
            out.append((fields[1].replace("\\040", " "), fields[2]))
    return out


def _filesystems(text):
    """The filesystem types the kernel supports (/proc/filesystems); None when unreadable."""
    if text is None:
        return None
    return set(line.split()[-1] for line in text.splitlines() if line.strip())


def _vxlan(root, kernel):
    """(loaded, available): available names where the module was found, None when unknowable."""
    loaded = os.path.isdir(os.path.join(root, "sys/module/vxlan"))
    if loaded:
        return True, "loaded"
    moddir = os.path.join(root, "lib/modules", kernel or "")
    if not kernel or not os.path.isdir(moddir):
        return False, None
    builtin = _read(root, "lib/modules/%s/modules.builtin" % kernel) or ""
    if any(line.rstrip().endswith("/vxlan.ko") for line in builtin.splitlines()):
        return True, "built in"
    dep = _read(root, "lib/modules/%s/modules.dep" % kernel) or ""
    for line in dep.splitlines():
        name = line.split(":", 1)[0]
        if os.path.basename(name).split(".ko")[0] == "vxlan":
            return False, "module %s" % name
    return False, ""


def _vlan_devices(root):
    base = os.path.join(root, "sys/class/net")
    out = []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return out
    for name in names:
        uevent = _read(root, "sys/class/net/%s/uevent" % name) or ""
        if "DEVTYPE=vlan" in uevent.split():
            out.append(name)
    return out


def gather(root="/", machine=None):
    """``(facts, host)``: the rule facts (as ``node_rules.host_facts``) and the host-only facts."""
    kernel = (_read(root, "/proc/sys/kernel/osrelease") or "").strip()
    release_text = _read(root, "/etc/os-release")
    if release_text is None:
        release_text = _read(root, "/usr/lib/os-release")
    release = node_rules.parse_os_release(release_text)
    facts = node_rules.host_facts(platform.node() if root == "/" else "", kernel,
                                  machine if machine is not None else platform.machine(), release)
    mounts = _mounts(_read(root, "/proc/mounts"))
    filesystems = _filesystems(_read(root, "/proc/filesystems"))
    cgroup2 = [m for m, fs in mounts if fs == "cgroup2"]
    loaded, available = _vxlan(root, kernel)
    host = {
        "bpffs_mounted": any(m == "/sys/fs/bpf" and fs == "bpf" for m, fs in mounts),
        "bpffs_supported": None if filesystems is None else "bpf" in filesystems,
        "cgroup2_mount": ("/sys/fs/cgroup" if "/sys/fs/cgroup" in cgroup2 else (cgroup2[0] if cgroup2 else "")),
        "cgroup2_supported": None if filesystems is None else "cgroup2" in filesystems,
        "vxlan_loaded": loaded,
        "vxlan_available": available,
        "vlan_devices": _vlan_devices(root),
        "os_release_found": release_text is not None,
    }
    return facts, host


def run_host_preflight(root="/", cgroup_v2_path=None, ignore=(), machine=None):
    """Gather and judge one host; ``checks`` has the per-node checks, the host-only ones and ``host_facts``."""
    facts, host = gather(root, machine)
    checks = node_rules.judge_host(facts, host, cgroup_v2_path)
    missing = [what for what, ok in (("kernel release", bool(facts["kernel"])),
                                     ("/etc/os-release", host["os_release_found"]),
                                     ("/proc/filesystems", host["bpffs_supported"] is not None)) if not ok]
    checks["host_facts"] = (rules.verdict(rules.WARN, "could not read: %s" % ", ".join(missing)) if missing
                            else rules.verdict(rules.OK, "kernel, os-release, mounts and devices read"))
    rules.apply_ignore(checks, ignore)
    summary = node_rules.node_summary(facts)
    return {"verdict": rules.worst(checks.values()), "checks": checks, "facts": dict(summary, **host)}
