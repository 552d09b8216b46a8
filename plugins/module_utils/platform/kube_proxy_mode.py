# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mode kube-proxy runs in, read from its configuration (a KubeProxyConfiguration's ``mode``) or its command
line (``--proxy-mode``): what the preflight reports and the kube_proxy role guards. Pure functions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

try:
    _STRING_TYPES = (str, unicode)  # noqa: F821  pylint: disable=undefined-variable
except NameError:
    _STRING_TYPES = (str,)

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
