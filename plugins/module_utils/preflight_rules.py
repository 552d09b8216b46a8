# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the eBPF preflight rules, as pure functions (no Ansible, no Kubernetes client).

Every rule returns a *verdict*: ``{"verdict": "ok"|"warn"|"fail", "reason": "..."}`` (plus details for some).
The same functions judge a Node read from the API (``node_facts``) and a host read over SSH
(``host_facts``): both are reduced to the same *facts* dict first.

The list of known check names lives here, once (``CHECK_NAMES``): the modules' ``ignore`` option and the
preflight role's ``preflight_ignore`` validation use it (a unit test keeps the role's argument_specs equal).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

try:
    _STRING_TYPES = (str, unicode)  # noqa: F821  pylint: disable=undefined-variable
except NameError:
    _STRING_TYPES = (str,)

OK = "ok"
WARN = "warn"
FAIL = "fail"
_RANK = {OK: 0, WARN: 1, FAIL: 2}

# -- check names (the one place they are defined) ---------------------------------------------------

NODE_CHECKS = ("architecture", "os_kernel", "windows", "immutable_os")
CLUSTER_CHECKS = ("platform", "kube_proxy_mode", "sctp_services", "policy_log_action", "floating_ips",
                  "application_layer_policy", "web_application_firewall", "l7_logs")
HOST_CHECKS = ("host_facts", "bpffs", "cgroup_v2", "vxlan_module", "vlan_devices")
CHECK_NAMES = NODE_CHECKS + CLUSTER_CHECKS + HOST_CHECKS

# -- platforms ------------------------------------------------------------------------------------

UNSUPPORTED_PLATFORMS = ("gke", "tkg", "rke")
PLATFORMS = ("generic", "kubeadm", "openshift", "kops", "mke", "eks", "aks") + UNSUPPORTED_PLATFORMS
PLATFORM_CHOICES = ("auto",) + PLATFORMS
# when several platforms leave signals, the most specific wins
_PLATFORM_PRIORITY = ("openshift", "gke", "aks", "eks", "tkg", "rke", "mke", "kops", "kubeadm")
PLATFORM_TITLES = {
    "generic": "generic Kubernetes", "kubeadm": "kubeadm", "openshift": "OpenShift", "kops": "kOps",
    "mke": "Mirantis Kubernetes Engine (MKE)", "eks": "Amazon EKS", "aks": "Azure AKS",
    "gke": "Google GKE", "tkg": "VMware Tanzu Kubernetes Grid (TKG)", "rke": "Rancher RKE",
}

SUPPORTED_ARCHITECTURES = ("amd64", "arm64")
_ARCH_ALIASES = {"x86_64": "amd64", "x86-64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}

IMMUTABLE_OS = ("talos", "bottlerocket", "flatcar", "fedora-coreos")
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
FLEX_VOLUME_PATH = "/var/lib/kubelet/plugins"
AWS_DNS = "169.254.169.253"


def verdict(state, reason, **details):
    """A verdict dict: ``state`` is ok/warn/fail; ``details`` are merged in (objects, count, ...)."""
    out = {"verdict": state, "reason": reason}
    out.update(details)
    return out


def worst(states):
    """The worst of verdict strings (or verdict dicts): fail > warn > ok; ok for none."""
    result = OK
    for s in states:
        if isinstance(s, dict):
            s = s.get("verdict", OK)
        if _RANK.get(s, 0) > _RANK[result]:
            result = s
    return result


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


def _version(*groups):
    out = []
    for g in groups:
        if g is None or g == "":
            break
        out.append(int(g))
    return tuple(out) or None


_OS_PATTERNS = (
    # (id, regex on the lower-cased osImage / PRETTY_NAME; groups are the version numbers)
    ("windows", re.compile(r"\bwindows\b")),
    ("rhcos", re.compile(r"red hat enterprise linux coreos(?:\s+\d+\.(\d)(\d+)\.)?")),
    ("rhel", re.compile(r"red hat enterprise linux(?:\s+(?:server|workstation|for \S+))?(?:\s+(\d+)(?:\.(\d+))?)?")),
    ("centos-stream", re.compile(r"centos stream(?:\s+(\d+))?")),
    ("centos", re.compile(r"centos(?: linux)?(?:\s+(\d+)(?:\.(\d+))?)?")),
    ("rocky", re.compile(r"rocky linux(?:\s+(\d+)(?:\.(\d+))?)?")),
    ("almalinux", re.compile(r"almalinux(?:\s+(\d+)(?:\.(\d+))?)?")),
    ("ubuntu", re.compile(r"ubuntu(?:\s+(\d+)\.(\d+))?")),
    ("fedora-coreos", re.compile(r"fedora coreos(?:\s+(\d+))?")),
    ("talos", re.compile(r"\btalos\b(?:\s+\(?v?(\d+)\.(\d+))?")),
    ("bottlerocket", re.compile(r"bottlerocket(?: os)?(?:\s+(\d+)\.(\d+))?")),
    ("flatcar", re.compile(r"flatcar(?: container linux)?(?:[^0-9]*(\d+)\.(\d+))?")),
)


def parse_os(os_image):
    """What an osImage (the kubelet's copy of PRETTY_NAME) says: ``{id, version, name, immutable}``.

    ``id`` is one of ubuntu, rhel, centos, centos-stream, rocky, almalinux, rhcos, talos, bottlerocket,
    flatcar, fedora-coreos, windows, ``other`` (any other distribution) or ``unknown`` (empty);
    ``version`` a tuple of ints or None. For RHEL CoreOS the version is the RHEL release it is built on
    (``415.92.x`` -> 9.2).
    """
    name = os_image.strip() if isinstance(os_image, _STRING_TYPES) else ""
    low = name.lower()
    info = {"id": "unknown" if not name else "other", "version": None, "name": name}
    for os_id, pattern in _OS_PATTERNS:
        m = pattern.search(low)
        if m:
            info["id"] = os_id
            info["version"] = _version(*m.groups())
            break
    info["immutable"] = info["id"] in IMMUTABLE_OS
    return info


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
        info["version"] = _version(*release["RHEL_VERSION"].split(".")[:2])
    if not info["name"]:
        info["name"] = release.get("NAME", "")
    return info


def normalise_arch(arch):
    """amd64/arm64 for their aliases (x86_64, aarch64); anything else lower-cased as is."""
    arch = arch.strip().lower() if isinstance(arch, _STRING_TYPES) else ""
    return _ARCH_ALIASES.get(arch, arch)


# -- facts: one shape for API nodes and hosts -------------------------------------------------------

def node_facts(node):
    """The facts of a Node object (from the API) that the rules read."""
    node = node if isinstance(node, dict) else {}
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return {
        "name": meta.get("name") or "",
        "source": "api",
        "architecture": info.get("architecture") or labels.get("kubernetes.io/arch")
        or labels.get("beta.kubernetes.io/arch") or "",
        "operating_system": info.get("operatingSystem") or labels.get("kubernetes.io/os")
        or labels.get("beta.kubernetes.io/os") or "",
        "os_image": info.get("osImage") or "",
        "kernel": info.get("kernelVersion") or "",
        "kubelet_version": info.get("kubeletVersion") or "",
        "provider_id": (node.get("spec") or {}).get("providerID") or "",
        "labels": labels,
        "annotations": meta.get("annotations") or {},
    }


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
    """The specification's table: Ubuntu >= 20.04; RHEL family 8.2+ with kernel >= 4.18.0-193, 9+;
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


# -- platform ---------------------------------------------------------------------------------------

def _label_prefixed(mapping, prefixes):
    for key in mapping or {}:
        for prefix in prefixes:
            if key.startswith(prefix):
                return key
    return None


def node_platform_signals(facts):
    """``[(platform, evidence)]`` that one node's labels, annotations, providerID and versions show."""
    labels, annotations = facts.get("labels") or {}, facts.get("annotations") or {}
    kubelet = facts.get("kubelet_version") or ""
    os_id = parse_os(facts.get("os_image"))["id"]
    out = []
    key = _label_prefixed(labels, ("cloud.google.com/gke-",))
    if key:
        out.append(("gke", "label %s" % key))
    if "-gke." in kubelet:
        out.append(("gke", "kubelet %s" % kubelet))
    key = _label_prefixed(labels, ("kubernetes.azure.com/",))
    if key:
        out.append(("aks", "label %s" % key))
    key = _label_prefixed(labels, ("eks.amazonaws.com/", "alpha.eksctl.io/"))
    if key:
        out.append(("eks", "label %s" % key))
    if re.search(r"-eks-[0-9a-f]+$", kubelet):
        out.append(("eks", "kubelet %s" % kubelet))
    key = _label_prefixed(labels, ("run.tanzu.vmware.com/",))
    if key:
        out.append(("tkg", "label %s" % key))
    if "+vmware." in kubelet:
        out.append(("tkg", "kubelet %s" % kubelet))
    key = _label_prefixed(annotations, ("rke.cattle.io/", "rke2.io/"))
    if key:
        out.append(("rke", "annotation %s" % key))
    key = _label_prefixed(labels, ("rke.cattle.io/",))
    if key:
        out.append(("rke", "label %s" % key))
    if "+rke2" in kubelet:
        out.append(("rke", "kubelet %s" % kubelet))
    key = _label_prefixed(labels, ("node.openshift.io/",))
    if key or os_id == "rhcos":
        out.append(("openshift", "label %s" % key if key else "RHEL CoreOS node image"))
    key = _label_prefixed(labels, ("com.docker.ucp.",))
    if key:
        out.append(("mke", "label %s" % key))
    key = _label_prefixed(labels, ("kops.k8s.io/",))
    if key:
        out.append(("kops", "label %s" % key))
    key = _label_prefixed(annotations, ("kubeadm.alpha.kubernetes.io/",))
    if key:
        out.append(("kubeadm", "annotation %s" % key))
    # a gce:// providerID alone is not GKE (self-managed clusters run on GCE too)
    return out


def api_group_signals(group_versions):
    """``[(platform, evidence)]`` from the served API groups (``group/version`` strings)."""
    out = []
    for gv in sorted(set(group_versions or ())):
        group = gv.split("/")[0]
        if group.endswith(".openshift.io"):
            out.append(("openshift", "API group %s" % group))
        elif group.endswith(".gke.io"):
            out.append(("gke", "API group %s" % group))
        elif group.endswith(".tanzu.vmware.com"):
            out.append(("tkg", "API group %s" % group))
        elif group in ("crd.k8s.amazonaws.com", "vpcresources.k8s.aws"):
            out.append(("eks", "API group %s" % group))
    return out


def detect_platform(all_facts, group_versions=()):
    """``{name, evidence, nodes}``: the platform the nodes and API groups point to (generic if none)."""
    votes = {}
    evidence = {}
    for facts in all_facts:
        seen = set()
        for platform, why in node_platform_signals(facts):
            if platform not in seen:
                votes[platform] = votes.get(platform, 0) + 1
                seen.add(platform)
            ev = evidence.setdefault(platform, [])
            if len(ev) < 3 and "%s (node %s)" % (why, facts.get("name")) not in ev:
                ev.append("%s (node %s)" % (why, facts.get("name")))
    for platform, why in api_group_signals(group_versions):
        votes.setdefault(platform, 0)
        ev = evidence.setdefault(platform, [])
        if len(ev) < 5:
            ev.append(why)
    for platform in _PLATFORM_PRIORITY:
        if platform in evidence:
            return {"name": platform, "evidence": evidence[platform], "nodes": votes.get(platform, 0),
                    "other_signals": sorted(p for p in evidence if p != platform)}
    return {"name": "generic", "evidence": [], "nodes": 0, "other_signals": []}


def aks_kube_proxy(all_facts):
    """Whether kube-proxy can be disabled on AKS: False with Azure CNI (or kubenet), True with a
    bring-your-own CNI, None when the nodes do not tell."""
    for facts in all_facts:
        labels = facts.get("labels") or {}
        plugin = (labels.get("kubernetes.azure.com/network-plugin") or "").lower()
        if plugin in ("azure", "kubenet"):
            return False, "node %s: label kubernetes.azure.com/network-plugin=%s" % (facts["name"], plugin)
        if plugin == "none":
            return True, "node %s: label kubernetes.azure.com/network-plugin=none (bring your own CNI)" % (
                facts["name"])
        for key in ("kubernetes.azure.com/azure-cni-overlay", "kubernetes.azure.com/podnetwork-type",
                    "kubernetes.azure.com/network-subnet", "kubernetes.azure.com/nodenetwork-vnetguid",
                    "kubernetes.azure.com/ebpf-dataplane"):
            if key in labels:
                return False, "node %s: label %s (Azure CNI)" % (facts["name"], key)
    return None, "no node label shows which CNI the cluster uses"


def platform_details(name, all_facts, source="detected", detection=None):
    """What the other roles need to know of a platform: how kube-proxy is disabled, what the install
    must set, the API server address hint."""
    details = {"name": name, "title": PLATFORM_TITLES.get(name, name), "source": source,
               "supported": name not in UNSUPPORTED_PLATFORMS, "kube_proxy_can_be_disabled": True,
               "kube_proxy_disable": "daemonset-node-selector", "installation": {},
               "felix_configuration": {}, "operator_dns_nameservers": [], "notes": []}
    if detection is not None:
        details["detected"] = detection
    aws = any((f.get("provider_id") or "").startswith("aws://") for f in all_facts)
    if name in UNSUPPORTED_PLATFORMS:
        details["kube_proxy_can_be_disabled"] = None
        details["kube_proxy_disable"] = None
    elif name == "openshift":
        details["kube_proxy_disable"] = "openshift-network-operator"
        details["notes"].append("set networks.operator.openshift.io cluster spec.deployKubeProxy=false; "
                                "API server api.<cluster_name>.<base_domain>:6443")
    elif name == "kops":
        details["kube_proxy_disable"] = "kops-cluster-spec"
        details["notes"].append("set kubeProxy.enabled: false in the kOps cluster spec; API server "
                                "api.internal.<clustername>")
        if aws:
            details["operator_dns_nameservers"] = [AWS_DNS]
    elif name == "mke":
        details["kube_proxy_disable"] = "mke-install-flags"
        details["notes"].append("MKE: install with --kube-proxy-mode=disabled --kube-default-drop-masq-bits; "
                                "API server proxy.local:6444")
    elif name == "eks":
        details["operator_dns_nameservers"] = [AWS_DNS]
        bottlerocket = sorted(f["name"] for f in all_facts
                              if parse_os(f.get("os_image"))["id"] == "bottlerocket")
        details["bottlerocket_nodes"] = len(bottlerocket)
        if bottlerocket:
            details["installation"]["flexVolumePath"] = FLEX_VOLUME_PATH
    elif name == "aks":
        can, why = aks_kube_proxy(all_facts)
        details["kube_proxy_can_be_disabled"] = can
        details["kube_proxy_evidence"] = why
        if can is False:
            details["kube_proxy_disable"] = None
            details["felix_configuration"]["bpfKubeProxyIptablesCleanupEnabled"] = False
            details["notes"].append("Azure CNI: kube-proxy cannot be disabled; the install must set "
                                    "FelixConfiguration bpfKubeProxyIptablesCleanupEnabled: false")
    return details


def check_platform(details):
    name = details["name"]
    title = details["title"]
    how = "set by the user" if details.get("source") == "override" else "detected"
    ev = (details.get("detected") or {}).get("evidence") or []
    evidence = (" from " + "; ".join(ev[:3])) if ev and details.get("source") != "override" else ""
    if name in UNSUPPORTED_PLATFORMS:
        return verdict(FAIL, "%s (%s%s) does not support the eBPF data plane" % (title, how, evidence))
    if name == "aks":
        can = details.get("kube_proxy_can_be_disabled")
        if can is False:
            return verdict(WARN, "%s with Azure CNI (%s): kube-proxy cannot be disabled; the install must "
                                 "set bpfKubeProxyIptablesCleanupEnabled: false" % (title, details.get(
                                     "kube_proxy_evidence")))
        if can is None:
            return verdict(WARN, "%s: cannot tell the CNI from the API (%s); with Azure CNI kube-proxy "
                                 "cannot be disabled and the install must set "
                                 "bpfKubeProxyIptablesCleanupEnabled: false" % (
                                     title, details.get("kube_proxy_evidence")))
        return verdict(OK, "%s (%s): kube-proxy can be disabled (%s)" % (title, how, details.get(
            "kube_proxy_evidence")))
    if name == "eks" and details.get("installation", {}).get("flexVolumePath"):
        return verdict(WARN, "%s with Bottlerocket nodes (%d): the Installation must set "
                             "spec.flexVolumePath: %s" % (title, details.get("bottlerocket_nodes", 0),
                                                          FLEX_VOLUME_PATH))
    return verdict(OK, "%s (%s%s)" % (title, how, evidence))


# -- kube-proxy ------------------------------------------------------------------------------------

_MODE_YAML = re.compile(r"^mode:[ \t]*[\"']?([A-Za-z]*)[\"']?[ \t]*(?:#.*)?$", re.M)
_MODE_JSON = re.compile(r"\"mode\"\s*:\s*\"([A-Za-z]*)\"")
_MODE_FLAG = re.compile(r"^--proxy-mode(?:=|$)(.*)")


def kube_proxy_mode_from_config(text):
    """The top-level ``mode`` of a KubeProxyConfiguration (YAML or JSON text); None when absent."""
    if not isinstance(text, _STRING_TYPES):
        return None
    m = _MODE_YAML.search(text) or _MODE_JSON.search(text)
    return m.group(1).lower() if m else None


def kube_proxy_mode_from_args(args):
    """The ``--proxy-mode`` of a kube-proxy command line (list of strings); None when absent."""
    args = [a for a in (args or []) if isinstance(a, _STRING_TYPES)]
    for i, arg in enumerate(args):
        m = _MODE_FLAG.match(arg.strip())
        if m:
            value = m.group(1)
            if not value and arg.strip() == "--proxy-mode" and i + 1 < len(args):
                value = args[i + 1]
            return value.strip().strip("\"'").lower()
    return None


def check_kube_proxy(mode, source, present):
    """IPVS must be switched to iptables before kube-proxy is disabled."""
    if not present:
        return verdict(OK, "kube-proxy not found in kube-system (no DaemonSet or ConfigMap)", mode=None)
    where = " (%s)" % source if source else ""
    if mode == "ipvs":
        return verdict(FAIL, "kube-proxy runs in IPVS mode%s: switch it to iptables mode first" % where,
                       mode=mode)
    if mode in (None, "", "iptables"):
        return verdict(OK, "kube-proxy mode %s%s" % (mode or "default (iptables)", where), mode=mode or "")
    return verdict(WARN, "kube-proxy mode %s%s is not covered by the eBPF migration procedure "
                         "(iptables expected)" % (mode, where), mode=mode)


# -- feature findings --------------------------------------------------------------------------------

def object_ref(obj):
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped)."""
    meta = obj.get("metadata") or {}
    parts = [obj.get("kind") or "?"]
    if meta.get("namespace"):
        parts.append(meta["namespace"])
    parts.append(meta.get("name") or "?")
    return "/".join(parts)


def findings(refs, fail_reason, ok_reason, max_objects=20, state=FAIL):
    """A verdict naming the objects found (``Kind/namespace/name``): the first ``max_objects`` and the count."""
    refs = list(refs)
    if not refs:
        return verdict(OK, ok_reason, objects=[], count=0)
    return verdict(state, "%s: %d (%s%s)" % (fail_reason, len(refs), ", ".join(refs[:3]),
                                             ", ..." if len(refs) > 3 else ""),
                   objects=refs[:max_objects], count=len(refs))


def service_has_sctp(svc):
    return any((p or {}).get("protocol") == "SCTP" for p in ((svc.get("spec") or {}).get("ports") or []))


def policy_has_log_action(policy):
    spec = policy.get("spec") or {}
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            if str((rule or {}).get("action") or "").lower() == "log":
                return True
    return False


FLOATING_IPS_ANNOTATION = "cni.projectcalico.org/floatingIPs"
L7_LOGGING_ANNOTATION = "projectcalico.org/l7-logging"


def pod_has_floating_ips(pod):
    return FLOATING_IPS_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def service_l7_logging(svc):
    value = ((svc.get("metadata") or {}).get("annotations") or {}).get(L7_LOGGING_ANNOTATION)
    return str(value).lower() == "true"


def felix_floating_ips(felix):
    return str((felix.get("spec") or {}).get("floatingIPs") or "") == "Enabled"


def felix_policy_sync(felix):
    return bool((felix.get("spec") or {}).get("policySyncPathPrefix"))


def _enabled(value):
    return str(value or "") == "Enabled"


def application_layer_features(app_layer):
    """The eBPF-incompatible features an operator ApplicationLayer resource turns on:
    a subset of {application_layer_policy, web_application_firewall, l7_logs}."""
    spec = app_layer.get("spec") or {}
    out = set()
    if _enabled(spec.get("applicationLayerPolicy")) or _enabled(spec.get("sidecarInjection")):
        out.add("application_layer_policy")
    if _enabled(spec.get("webApplicationFirewall")):
        out.add("web_application_firewall")
    if _enabled((spec.get("logCollection") or {}).get("collectLogs")) or _enabled(
            (spec.get("l7LogCollection") or {}).get("collectL7Logs")):
        out.add("l7_logs")
    known = ("applicationLayerPolicy", "sidecarInjection", "webApplicationFirewall", "logCollection",
             "l7LogCollection")
    if not out and not any(k in spec for k in known):
        out.add("application_layer_policy")  # an ApplicationLayer that says nothing: count it as ALP
    return out


# -- host-level rules ------------------------------------------------------------------------------

def check_bpffs(mounted, supported):
    if mounted:
        return verdict(OK, "bpffs mounted at /sys/fs/bpf")
    if supported:
        return verdict(WARN, "bpffs is not mounted at /sys/fs/bpf but the kernel supports it (mountable); "
                             "mount it persistently so pods keep connectivity when calico-node restarts")
    if supported is None:
        return verdict(WARN, "could not tell whether bpffs is mounted or mountable")
    return verdict(FAIL, "bpffs is neither mounted at /sys/fs/bpf nor supported by the kernel")


def check_cgroup_v2(mounted_at, supported):
    if mounted_at:
        return verdict(OK, "cgroup v2 mounted at %s" % mounted_at)
    if supported:
        return verdict(WARN, "cgroup v2 is not mounted but the kernel supports it (Felix mounts it at "
                             "its cgroupV2Path)")
    if supported is None:
        return verdict(WARN, "could not tell whether the kernel supports cgroup v2")
    return verdict(FAIL, "the kernel does not support cgroup v2 (cgroup2 missing from /proc/filesystems)")


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


# -- ignore, summary -------------------------------------------------------------------------------

def apply_ignore(checks, ignore):
    """Downgrade failing checks named in ``ignore`` to warnings (in place); return ``checks``."""
    ignore = set(ignore or ())
    for name, v in checks.items():
        if name in ignore and v.get("verdict") == FAIL:
            v["verdict"] = WARN
            v["ignored"] = True
            v["reason"] = "ignored by request: " + v["reason"]
    return checks


def _count(states):
    out = {OK: 0, WARN: 0, FAIL: 0}
    for s in states:
        out[s] = out.get(s, 0) + 1
    return out


def summarise(nodes, checks, hosts=None):
    """The summary of a preflight: counts, the verdict, ``eligible``, each failing node/host/check
    with its reason, and ``message`` (one text listing every failure)."""
    hosts = hosts or {}
    by_check = {}
    failing, warnings, ignored = [], [], set()

    def note(kind, name, check, v):
        row = by_check.setdefault(check, {OK: 0, WARN: 0, FAIL: 0})
        row[v["verdict"]] += 1
        if v.get("ignored"):
            ignored.add(check)
        if v["verdict"] == OK:
            return
        line = "%s %s: %s: %s" % (kind, name, check, v["reason"]) if kind else "%s: %s" % (check, v["reason"])
        (failing if v["verdict"] == FAIL else warnings).append(line)

    for name in sorted(nodes):
        for check in NODE_CHECKS:
            if check in nodes[name]["checks"]:
                note("node", name, check, nodes[name]["checks"][check])
    for name in sorted(hosts):
        for check in CHECK_NAMES:
            if check in hosts[name].get("checks", {}):
                note("host", name, check, hosts[name]["checks"][check])
    for check in CLUSTER_CHECKS:
        if check in checks:
            note("", "", check, checks[check])
    overall = FAIL if failing else (WARN if warnings else OK)
    summary = {
        "verdict": overall,
        "eligible": overall != FAIL,
        "nodes": dict(_count(n["verdict"] for n in nodes.values()), total=len(nodes)),
        "checks": dict(_count(c["verdict"] for c in checks.values()), total=len(checks)),
        "by_check": by_check,
        "failing": failing,
        "warnings": warnings,
        "ignored": sorted(ignored),
    }
    if hosts:
        summary["hosts"] = dict(_count(h["verdict"] for h in hosts.values()), total=len(hosts))
    if failing:
        summary["message"] = ("The cluster is not eligible for the eBPF data plane (%d failing):\n- %s"
                              % (len(failing), "\n- ".join(failing)))
    else:
        summary["message"] = "The cluster is eligible for the eBPF data plane (%d warnings)." % len(warnings)
    return summary
