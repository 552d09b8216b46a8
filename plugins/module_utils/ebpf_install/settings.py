# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the ebpf_install role's variables that depend on each other, checked before anything is read or written
(pure). Each problem is one sentence that starts with the variable to change and says what it may be.

The types and choices of each variable are the role's argument specs' (``meta/argument_specs.yml``); these are the
checks the specs cannot say: an Enterprise install needs exactly one pull secret, the Installation overrides must not
contradict the eBPF install, URLs are http(s), versions are vX.Y.Z, waits are positive and the poll interval is not
longer than the timeout, the readiness window is -1 or more, and platform ``auto`` needs the preflight that detects it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import whole

ENTERPRISE = "TigeraSecureEnterprise"
_URL = re.compile(r"^https?://[^\s/]+")
_VERSION = re.compile(r"^v\d+\.\d+\.\d+$")
PLATFORMS_NAMED = "kubeadm, generic, kops, openshift, eks, aks, mke"


def _secret(v):
    variant = v.get("ebpf_install_variant")
    given = [bool(v.get("ebpf_install_pull_secret_file")), bool(v.get("ebpf_install_pull_secret"))]
    if (variant == ENTERPRISE and not any(given)) or all(given):
        return ["ebpf_install_pull_secret_file / ebpf_install_pull_secret: the %s variant needs exactly one of them "
                "(the image pull secret for Tigera's registry); set one, or set ebpf_install_variant: Calico for "
                "open source." % ENTERPRISE]
    return []


def _overrides(v):
    spec = v.get("ebpf_install_installation_spec") or {}
    dataplane = (spec.get("calicoNetwork") or {}).get("linuxDataplane")
    variant = spec.get("variant")
    if (dataplane or "BPF") == "BPF" and (variant or v.get("ebpf_install_variant")) == v.get("ebpf_install_variant"):
        return []
    return ["ebpf_install_installation_spec.calicoNetwork.linuxDataplane: must be BPF, the only value allowed here "
            "(this role sets the eBPF data plane; got %s); ebpf_install_installation_spec.variant: must be "
            "ebpf_install_variant (%s) or left out (got %s)." % (
                json.dumps(dataplane), v.get("ebpf_install_variant"), json.dumps(variant))]


def _urls(v, custom_resources_url):
    values = (("ebpf_install_downloads_url", v.get("ebpf_install_downloads_url")),
              ("ebpf_install_manifest_url", v.get("ebpf_install_manifest_url")),
              ("ebpf_install_custom_resources_url", custom_resources_url))
    return ["%s: must be an http:// or https:// URL (got %s)" % (name, json.dumps(value))
            for name, value in values if not _URL.match(value if isinstance(value, str) else "")]


def _versions(v):
    return ["%s: must look like vX.Y.Z, for example v3.31.4 (got %s)" % (name, json.dumps(v[name]))
            for name in ("ebpf_install_enterprise_version", "ebpf_install_calico_version")
            if name in v and not _VERSION.match(v[name] if isinstance(v[name], str) else "")]


def _waits(v):
    timeout, interval = whole(v.get("ebpf_install_timeout")), whole(v.get("ebpf_install_poll_interval"))
    out = ["%s: must be a positive number of seconds (got %s)" % (name, v.get(name))
           for name, value in (("ebpf_install_timeout", timeout), ("ebpf_install_poll_interval", interval))
           if value is None or value <= 0]
    if not out and interval > timeout:
        out.append("ebpf_install_poll_interval (%s) must not exceed ebpf_install_timeout (%s)" % (interval, timeout))
    window = whole(v.get("ebpf_install_readiness_window", -1))
    if window is None or window < -1:
        out.append("ebpf_install_readiness_window: must be -1 (from calico-node's readiness probe), 0 (no window) or a "
                   "positive number of seconds (got %s)" % v.get("ebpf_install_readiness_window"))
    return out


def _platform(v):
    run_preflight = v.get("ebpf_install_run_preflight", True)
    if isinstance(run_preflight, str):
        run_preflight = run_preflight.strip().lower() in ("true", "yes", "on", "1")
    if v.get("ebpf_install_platform") == "auto" and not run_preflight:
        return ["ebpf_install_platform: 'auto' needs the preflight's detection; set ebpf_install_run_preflight: true, "
                "or name the platform (%s)" % PLATFORMS_NAMED]
    return []


def problems(variables, custom_resources_url=None):
    """Every problem of the role's ``variables`` (their names as the role's: ``ebpf_install_*``), in the order a user
    reads them; ``custom_resources_url`` is the one the role derived (the variable's, or the release's)."""
    v = dict(variables or {})
    if custom_resources_url is None:
        custom_resources_url = v.get("ebpf_install_custom_resources_url")
    return _secret(v) + _overrides(v) + _urls(v, custom_resources_url) + _versions(v) + _waits(v) + _platform(v)
