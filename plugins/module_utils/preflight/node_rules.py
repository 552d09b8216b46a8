# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eBPF preflight rules of one node, as pure functions: kernel and OS parsing, architecture, Windows,
immutable OS (for a Node read from the API, ``node_facts``, or a host read over SSH, ``host_facts``: both are
reduced to the same *facts* dict first), and the host-only checks (bpffs, cgroup v2, vxlan, VLAN devices).
Calico's documentation: "Enable eBPF on an existing cluster", section "Before you begin" (supported kernels
and distributions).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.nodes import parse_os, version_tuple

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.rules import (
    FAIL, OK, WARN, verdict)

try:
    _STRING_TYPES = (str, unicode)  # noqa: F821  pylint: disable=undefined-variable
except NameError:
    _STRING_TYPES = (str,)


SUPPORTED_ARCHITECTURES = ("amd64", "arm64")
_ARCH_ALIASES = {"x86_64": "amd64", "x86-64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}

RHEL_FAMILY = ("rhel", "centos", "centos-stream", "rocky", "almalinux", "rhcos")
_OS_TITLES = {"ubuntu": "Ubuntu", "rhel": "RHEL", "centos": "CentOS", "centos-stream": "CentOS Stream",
              "rocky": "Rocky Linux", "almalinux": "AlmaLinux", "rhcos": "RHEL CoreOS", "talos": "Talos",
              "bottlerocket": "Bottlerocket", "flatcar": "Flatcar", "fedora-coreos": "Fedora CoreOS",
              "windows": "Windows"}

MIN_UBUNTU = (20, 4)
MIN_RHEL = (8, 2)
MIN_RHEL_KERNEL = (4, 18, 0)
MIN_RHEL_KERNEL_RELEASE = 193
MIN_KERNEL = (5, 3)

FELIX_CGROUP_FIELD = "FelixConfiguration default spec.cgroupV2Path"


# -- parsing ----------------------------------------------------------------------------------------

_KERNEL_RE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?(?:-(\d+))?")


def parse_kernel(text):
    """``(major, minor, patch, release)`` from a kernel release string, or None when unreadable.

    ``4.18.0-193.el8.x86_64`` -> (4, 18, 0, 193); ``5.15.0-1051-azure`` -> (5, 15, 0, 1051);
    ``6.1.0-18-cloud-amd64`` -> (6, 1, 0, 18); ``5.10.209-198.858.amzn2.x86_64`` -> (5, 10, 209, 198);
    ``6.8.0`` -> (6, 8, 0, 0). A missing patch or release counts as 0.
    """
    if not isinstance(text, _STRING_TYPES):
        return None
    m = _KERNEL_RE.match(text)
    if not m:
        return None
    return tuple(int(g) if g is not None else 0 for g in m.groups())


def parse_os_release(text):
    """The KEY=value pairs of an /etc/os-release file (quotes removed)."""
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def os_from_release(release):
    """``parse_os`` for a host: from /etc/os-release fields (PRETTY_NAME first, like the kubelet)."""
    release = release or {}
    info = parse_os(release.get("PRETTY_NAME") or "")
    if info["id"] in ("other", "unknown"):
        alt = " ".join(x for x in (release.get("NAME"), release.get("VERSION_ID")) if x)
        alt_info = parse_os(alt)
        if alt_info["id"] not in ("other", "unknown"):
            info = alt_info
    if release.get("ID") == "fedora" and release.get("VARIANT_ID") == "coreos":
        info["id"], info["immutable"] = "fedora-coreos", True
    if info["id"] == "rhcos" and release.get("RHEL_VERSION"):
        info["version"] = version_tuple(*release["RHEL_VERSION"].split(".")[:2])
    if not info["name"]:
        info["name"] = release.get("NAME", "")
    return info


def normalise_arch(arch):
    """amd64/arm64 for their aliases (x86_64, aarch64); anything else lower-cased as is."""
    arch = arch.strip().lower() if isinstance(arch, _STRING_TYPES) else ""
    return _ARCH_ALIASES.get(arch, arch)


# -- facts: one shape for API nodes and hosts -------------------------------------------------------


def host_facts(name, kernel, machine, os_release):
    """The facts of a host, from its kernel release, ``uname -m`` and parsed /etc/os-release."""
    release = os_release or {}
    return {
        "name": name or "",
        "source": "host",
        "architecture": machine or "",
        "operating_system": "linux",
        "os_image": release.get("PRETTY_NAME") or " ".join(
            x for x in (release.get("NAME"), release.get("VERSION_ID")) if x),
        "os_release": release,
        "kernel": kernel or "",
        "kubelet_version": "",
        "provider_id": "",
        "labels": {},
        "annotations": {},
    }


def facts_os(facts):
    if facts.get("source") == "host" and facts.get("os_release"):
        return os_from_release(facts["os_release"])
    return parse_os(facts.get("os_image"))


# -- per-node rules ------------------------------------------------------------------------------------

def check_architecture(arch):
    raw = arch.strip() if isinstance(arch, _STRING_TYPES) else ""
    norm = normalise_arch(raw)
    if not norm:
        return verdict(WARN, "architecture unknown (no nodeInfo.architecture or kubernetes.io/arch label)")
    if norm in SUPPORTED_ARCHITECTURES:
        return verdict(OK, norm)
    if norm in ("aarch64_be", "arm64be", "arm64_be"):
        return verdict(FAIL, "%s: big-endian arm64 is not supported (arm64 little-endian only)" % raw)
    return verdict(FAIL, "%s is not supported by the eBPF data plane (amd64 and arm64 only)" % raw)


def _kernel_text(version):
    return "%d.%d.%d-%d" % version


def _generic_kernel_rule(label, kernel_text, kernel):
    if kernel is None:
        return verdict(WARN, "%s: kernel %r unreadable; eBPF mode needs Linux 5.3 or newer"
                       % (label, kernel_text or ""))
    if kernel[:2] >= MIN_KERNEL:
        return verdict(OK, "%s, kernel %s (5.3 or newer)" % (label, kernel_text))
    return verdict(FAIL, "%s: kernel %s is older than 5.3" % (label, kernel_text))


def _rhel_kernel_rule(label, kernel_text, kernel):
    if kernel is None:
        return verdict(WARN, "%s: kernel %r unreadable; eBPF mode needs 4.18.0-193 or newer"
                       % (label, kernel_text or ""))
    base, release = kernel[:3], kernel[3]
    if base > MIN_RHEL_KERNEL or (base == MIN_RHEL_KERNEL and release >= MIN_RHEL_KERNEL_RELEASE):
        return verdict(OK, "%s, kernel %s (4.18.0-193 or newer)" % (label, kernel_text))
    return verdict(FAIL, "%s: kernel %s is older than 4.18.0-193" % (label, kernel_text))


def _os_label(os_info):
    title = _OS_TITLES.get(os_info["id"])
    if not title:
        return os_info["name"] or "unknown OS"
    if os_info["id"] == "ubuntu" and os_info["version"] and len(os_info["version"]) > 1:
        return "Ubuntu %d.%02d" % os_info["version"][:2]
    if os_info["version"]:
        return "%s %s" % (title, ".".join(str(v) for v in os_info["version"]))
    return title


def check_os_kernel(os_info, kernel_text):
    """The table of Calico's documentation ("Enable eBPF on an existing cluster", section "Before you begin"):
    Ubuntu >= 20.04; RHEL family 8.2+ with kernel >= 4.18.0-193, 9+;
    any other distribution kernel >= 5.3; Ubuntu older than 20.04 fails whatever its kernel."""
    kernel = parse_kernel(kernel_text)
    os_id, version = os_info["id"], os_info["version"]
    label = _os_label(os_info)
    if os_id == "windows":
        return verdict(FAIL, "%s is not Linux" % (os_info["name"] or "Windows"))
    if os_id == "unknown" and not kernel_text:
        return verdict(WARN, "no OS image and no kernel version reported (missing nodeInfo)")
    if os_id == "ubuntu":
        if version is None:
            return _generic_kernel_rule("Ubuntu (release unknown)", kernel_text, kernel)
        if version[:2] < MIN_UBUNTU:
            return verdict(FAIL, "%s is older than Ubuntu 20.04 (required whatever the kernel)"
                           % os_info["name"])
        return verdict(OK, "%s (20.04 or newer)" % os_info["name"])
    if os_id in RHEL_FAMILY:
        if version is None:
            # CentOS Stream without a number, RHEL CoreOS without a recognisable build: judge by kernel
            if kernel is not None and kernel[:3] == MIN_RHEL_KERNEL:
                return _rhel_kernel_rule(label, kernel_text, kernel)
            return _generic_kernel_rule(label, kernel_text, kernel)
        if version[0] >= 9:
            return verdict(OK, "%s (9 or newer)" % label)
        if version[0] < 8 or (len(version) > 1 and version[:2] < MIN_RHEL):
            return verdict(FAIL, "%s is older than 8.2 (kernel %s)" % (label, kernel_text or "unknown"))
        return _rhel_kernel_rule(label, kernel_text, kernel)
    if os_id == "unknown":
        return _generic_kernel_rule("OS unknown", kernel_text, kernel)
    return _generic_kernel_rule(label, kernel_text, kernel)


def is_windows(facts):
    os_name = (facts.get("operating_system") or "").lower()
    label = ((facts.get("labels") or {}).get("kubernetes.io/os") or "").lower()
    return os_name == "windows" or label == "windows" or parse_os(facts.get("os_image"))["id"] == "windows"


def check_windows(facts):
    if is_windows(facts):
        return verdict(FAIL, "Windows node: the eBPF data plane does not support clusters that mix "
                             "Windows nodes with eBPF nodes")
    return verdict(OK, "Linux")


def check_immutable_os(os_info, cgroup_v2_path):
    """Immutable OS (Talos, Bottlerocket, Flatcar, Fedora CoreOS): FelixConfiguration ``cgroupV2Path``
    must be a writable path; warn with the exact field when it is not set."""
    if not os_info.get("immutable"):
        return verdict(OK, "not an immutable OS")
    label = _os_label(os_info)
    if cgroup_v2_path:
        return verdict(OK, "%s is immutable; %s is set to %s (it must be writable on the node)"
                       % (label, FELIX_CGROUP_FIELD, cgroup_v2_path))
    return verdict(WARN, "%s is an immutable OS: set %s to a writable path on the node before enabling "
                         "eBPF mode" % (label, FELIX_CGROUP_FIELD), field=FELIX_CGROUP_FIELD)


def judge_node(facts, cgroup_v2_path=None):
    """Every per-node check for one node's (or host's) facts: ``{check name: verdict}``."""
    os_info = facts_os(facts)
    checks = {
        "architecture": check_architecture(facts.get("architecture")),
        "os_kernel": check_os_kernel(os_info, facts.get("kernel")),
        "windows": check_windows(facts),
        "immutable_os": check_immutable_os(os_info, cgroup_v2_path),
    }
    return checks


def node_summary(facts):
    """What the report shows of a node besides its checks."""
    os_info = facts_os(facts)
    return {"os_image": facts.get("os_image") or "", "os": os_info["id"], "kernel": facts.get("kernel") or "",
            "architecture": normalise_arch(facts.get("architecture")), "immutable": os_info["immutable"]}


# -- host-level rules ------------------------------------------------------------------------------

def _mount_verdict(mounted, supported, ok, mountable, unknown, missing):
    """A file system the data plane needs: mounted (``ok``), else mountable (``mountable``, a warning), else not
    known (``unknown``, a warning), else missing from the kernel (``missing``, a failure)."""
    if mounted:
        return verdict(OK, ok)
    if supported:
        return verdict(WARN, mountable)
    if supported is None:
        return verdict(WARN, unknown)
    return verdict(FAIL, missing)


def check_bpffs(mounted, supported):
    return _mount_verdict(
        mounted, supported, "bpffs mounted at /sys/fs/bpf",
        "bpffs is not mounted at /sys/fs/bpf but the kernel supports it (mountable); "
        "mount it persistently so pods keep connectivity when calico-node restarts",
        "could not tell whether bpffs is mounted or mountable",
        "bpffs is neither mounted at /sys/fs/bpf nor supported by the kernel")


def check_cgroup_v2(mounted_at, supported):
    return _mount_verdict(
        mounted_at, supported, "cgroup v2 mounted at %s" % mounted_at,
        "cgroup v2 is not mounted but the kernel supports it (Felix mounts it at its cgroupV2Path)",
        "could not tell whether the kernel supports cgroup v2",
        "the kernel does not support cgroup v2 (cgroup2 missing from /proc/filesystems)")


def check_vxlan(loaded, available):
    """eBPF mode carries NodePort traffic in VXLAN: the vxlan module must be loaded, built in or present."""
    if loaded:
        return verdict(OK, "vxlan module loaded or built in")
    if available:
        return verdict(OK, "vxlan module available (%s)" % available)
    if available is None:
        return verdict(WARN, "could not tell whether the vxlan kernel module is available "
                             "(no /lib/modules for this kernel)")
    return verdict(FAIL, "vxlan kernel module not found: eBPF mode needs VXLAN for NodePort traffic")


def check_vlan_devices(devices):
    devices = sorted(devices or [])
    if not devices:
        return verdict(OK, "no tagged VLAN devices", objects=[], count=0)
    return verdict(FAIL, "tagged VLAN devices are not supported in eBPF mode: %s" % ", ".join(devices[:20]),
                   objects=devices[:20], count=len(devices))


def judge_host(facts, host, cgroup_v2_path=None):
    """Per-node rules plus the host-only ones, for facts gathered on the host itself
    (``host``: bpffs_mounted, bpffs_supported, cgroup2_mount, cgroup2_supported, vxlan_loaded,
    vxlan_available, vlan_devices)."""
    checks = judge_node(facts, cgroup_v2_path)
    checks["bpffs"] = check_bpffs(host.get("bpffs_mounted"), host.get("bpffs_supported"))
    checks["cgroup_v2"] = check_cgroup_v2(host.get("cgroup2_mount"), host.get("cgroup2_supported"))
    checks["vxlan_module"] = check_vxlan(host.get("vxlan_loaded"), host.get("vxlan_available"))
    checks["vlan_devices"] = check_vlan_devices(host.get("vlan_devices"))
    return checks
