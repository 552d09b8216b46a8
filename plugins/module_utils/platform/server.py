# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API server's address as a kubeconfig names it: its URL taken apart (``parse_server``) and, on kOps, the
cluster name its host carries (``kops_cluster_name_from_host``). Pure functions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.endpoint import is_ip_literal

try:
    _STRING_TYPES = (str, unicode)  # noqa: F821  pylint: disable=undefined-variable
except NameError:
    _STRING_TYPES = (str,)

_SERVER = re.compile(r"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>\[[^\]]*\]|[^:/?#]*)"
                     r"(?::(?P<port>[^/?#]*))?(?P<path>[/?#].*)?$")


def parse_server(url):
    """``{url, scheme, host, port, path}`` of a kubeconfig server URL; None when it is not one.

    ``https://api.example.com`` -> port 443 (80 for http); ``https://[fd00::1]:6443`` -> host ``fd00::1``.
    """
    if not isinstance(url, _STRING_TYPES) or not url.strip():
        return None
    m = _SERVER.match(url.strip())
    if not m or not m.group("host"):
        return None
    scheme = (m.group("scheme") or "https").lower()
    host = m.group("host")
    if host.startswith("["):
        host = host[1:-1]
    port_text = m.group("port")
    if port_text:
        if not port_text.isdigit():
            return None
        port = int(port_text)
    else:
        port = 80 if scheme == "http" else 443
    return {"url": url.strip(), "scheme": scheme, "host": host, "port": port,
            "path": m.group("path") or ""}


def kops_cluster_name_from_host(host):
    """The kOps cluster name from an API host ``api.<name>`` or ``api.internal.<name>``; None otherwise."""
    low = (host or "").lower()
    if is_ip_literal(low):
        return None
    for head in ("api.internal.", "api."):
        if low.startswith(head) and len(low) > len(head):
            return host[len(head):]
    return None
