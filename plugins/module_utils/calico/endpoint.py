# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One fact about Calico's API server endpoint (ConfigMap ``kubernetes-services-endpoint``), pure Python: when its
host is a DNS name, calico-node in eBPF mode resolves it when it starts, before it serves any Service; where only the
cluster's own DNS answers for that name, calico-node can hang at boot (Calico issue 10683). Used by the preflight
(a warning) and by the services endpoint job (its result and the install's summary)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

try:
    import ipaddress as _ipaddress
except ImportError:  # pragma: no cover - Python 2.7 targets without the backport
    _ipaddress = None

try:
    _STRING_TYPES = (str, unicode)  # noqa: F821  pylint: disable=undefined-variable
except NameError:
    _STRING_TYPES = (str,)

# names that only the cluster's own DNS answers (a Service's name, the cluster domain)
CLUSTER_DNS_SUFFIXES = (".svc", ".cluster.local")
ISSUE = "Calico issue 10683"


_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def is_ip_literal(host):
    """True for an IPv4 or IPv6 address (with or without IPv6 brackets)."""
    if not isinstance(host, _STRING_TYPES) or not host:
        return False
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if _ipaddress is not None:
        try:
            _ipaddress.ip_address(u"%s" % text)
            return True
        except ValueError:
            return False
    if _IPV4.match(text):  # pragma: no cover - Python 2.7 targets
        return all(int(part) <= 255 for part in text.split("."))
    return ":" in text and re.match(r"^[0-9A-Fa-f:.]+$", text) is not None  # pragma: no cover


def dns_name_warning(host):
    """A warning (one paragraph) when ``host`` is a DNS name; None for an IP address or no host."""
    if not isinstance(host, _STRING_TYPES) or not host.strip() or is_ip_literal(host.strip()):
        return None
    low = host.strip().lower().rstrip(".")
    cluster_only = low.endswith(CLUSTER_DNS_SUFFIXES) or "." not in low
    advice = ("This name looks cluster-internal: give a name the nodes' own resolver (or /etc/hosts) answers, or a "
              "static IP address" if cluster_only else
              "Make sure every node resolves it without the cluster (the resolver of its /etc/resolv.conf, or "
              "/etc/hosts), or give a static IP address")
    return ("KUBERNETES_SERVICE_HOST %s is a DNS name: calico-node in eBPF mode resolves it when it starts, before it "
            "serves any Service, and where only the cluster's DNS (CoreDNS, reached through a Service) answers for "
            "it, calico-node can hang at boot (%s). %s." % (host.strip(), ISSUE, advice))
