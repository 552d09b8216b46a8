# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Node says of itself, as the platform detection and the preflight's rules read it: ``node_facts`` (the
fields of a Node object they use) and ``parse_os`` (what its osImage names: distribution, version, immutable or
not). Pure functions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

try:
    _STRING_TYPES = (str, unicode)  # noqa: F821  pylint: disable=undefined-variable
except NameError:
    _STRING_TYPES = (str,)

IMMUTABLE_OS = ("talos", "bottlerocket", "flatcar", "fedora-coreos")


def version_tuple(*groups):
    out = []
    for g in groups:
        if g is None or g == "":
            break
        out.append(int(g))
    return tuple(out) or None


# the version that follows a distribution's name in its PRETTY_NAME: "9" or "9.2", "22.04", "39"
_MAJOR_MINOR = r"(?:\s+(\d+)(?:\.(\d+))?)?"
_MAJOR_DOT_MINOR = r"(?:\s+(\d+)\.(\d+))?"
_MAJOR = r"(?:\s+(\d+))?"
# (id, the name and then its version, on the lower-cased osImage / PRETTY_NAME; groups are the version numbers),
# the first match wins
_OS_PATTERNS = tuple((os_id, re.compile(pattern)) for os_id, pattern in (
    ("windows", r"\bwindows\b"),
    ("rhcos", r"red hat enterprise linux coreos(?:\s+\d+\.(\d)(\d+)\.)?"),
    ("rhel", r"red hat enterprise linux(?:\s+(?:server|workstation|for \S+))?" + _MAJOR_MINOR),
    ("centos-stream", r"centos stream" + _MAJOR),
    ("centos", r"centos(?: linux)?" + _MAJOR_MINOR),
    ("rocky", r"rocky linux" + _MAJOR_MINOR),
    ("almalinux", r"almalinux" + _MAJOR_MINOR),
    ("ubuntu", r"ubuntu" + _MAJOR_DOT_MINOR),
    ("fedora-coreos", r"fedora coreos" + _MAJOR),
    ("talos", r"\btalos\b(?:\s+\(?v?(\d+)\.(\d+))?"),
    ("bottlerocket", r"bottlerocket(?: os)?" + _MAJOR_DOT_MINOR),
    ("flatcar", r"flatcar(?: container linux)?(?:[^0-9]*(\d+)\.(\d+))?"),
))


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
            info["version"] = version_tuple(*m.groups())
            break
    info["immutable"] = info["id"] in IMMUTABLE_OS
    return info


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
