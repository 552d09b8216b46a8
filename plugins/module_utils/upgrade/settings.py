# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the upgrade role's variables checked before anything is read or written (pure). Each problem names the
variable and what it accepts.

The types and choices of each variable are the role's argument specs'; these are the checks the specs cannot say:
versions are vX.Y.Z and the target is one this collection upgrades to, URLs are http(s), the waits are positive with
the poll interval not above the timeout, calicoctl's download has a checksum, the etcd TLS pair comes together and
the etcd settings only with the etcd datastore, and every Application Layer Policy deployment has a name. The etcd
key, certificate and CA are secrets: the role passes only whether each is given.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import version as calico_version
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import whole

_CHECKSUM = re.compile(r"^(sha1|sha224|sha256|sha384|sha512|md5):\S+$")


def _versions_and_urls(v):
    target = v.get("upgrade_target_version") or ""
    endpoints = v.get("upgrade_etcd_endpoints")
    out = calico_version.version_problems({"upgrade_target_version": target,
                                           "upgrade_current_version": v.get("upgrade_current_version") or ""})
    out += calico_version.target_problems(target, allow_untested=bool(v.get("upgrade_allow_untested_target")))
    out += calico_version.url_problems({name: v.get(name) for name in (
        "upgrade_manifest_url", "upgrade_chart_repo_url", "upgrade_calicoctl_url")})
    out += calico_version.url_problems({"upgrade_etcd_endpoints": endpoints or []})
    if endpoints is not None and len(endpoints) == 0:
        out.append("upgrade_etcd_endpoints is an empty list: give at least one etcd URL (http:// or https://), or "
                   "leave it unset to keep the etcd_endpoints of the installed manifest")
    if not target:
        out.append("upgrade_target_version must be set (vX.Y.Z)")
    return out


def _waits_and_downloads(v):
    out = []
    timeout, interval = whole(v.get("upgrade_timeout")), whole(v.get("upgrade_poll_interval"))
    if not (timeout and interval and timeout > 0 and 0 < interval <= timeout):
        out.append("upgrade_timeout and upgrade_poll_interval must be positive whole seconds, the interval not above "
                   "the timeout (got %s and %s)" % (v.get("upgrade_timeout"), v.get("upgrade_poll_interval")))
    if v.get("upgrade_calicoctl_install") and not _CHECKSUM.match(v.get("upgrade_calicoctl_checksum") or ""):
        out.append("upgrade_calicoctl_checksum is required with upgrade_calicoctl_install: sha256:<hex> or "
                   "sha256:<URL of a checksum file>")
    return out


def _etcd(v):
    out = []
    if bool(v.get("upgrade_etcd_key")) != bool(v.get("upgrade_etcd_cert")):
        out.append("upgrade_etcd_key and upgrade_etcd_cert go together (give both or neither)")
    if v.get("upgrade_datastore") == "kubernetes":
        if (v.get("upgrade_etcd_endpoints") or v.get("upgrade_etcd_key") or v.get("upgrade_etcd_cert")
                or v.get("upgrade_etcd_ca")):
            out.append("upgrade_etcd_endpoints, upgrade_etcd_key, upgrade_etcd_cert and upgrade_etcd_ca are for the "
                       "etcd datastore: upgrade_datastore is kubernetes (set upgrade_datastore to etcd or leave it "
                       "empty, or drop them)")
        if "-etcd" in (v.get("upgrade_flavor") or ""):
            out.append("upgrade_flavor %s is an etcd datastore manifest: upgrade_datastore must be etcd or empty (got "
                       "kubernetes)" % v["upgrade_flavor"])
    return out


def problems(variables):
    """Every problem of the role's ``variables`` (by the role's names, ``upgrade_*``; the etcd key, certificate and CA
    as whether each is given), in the order a user reads them."""
    v = dict(variables or {})
    unnamed = ["upgrade_alp_deployments: an entry without a name: %s" % (entry,)
               for entry in v.get("upgrade_alp_deployments") or []
               if not (isinstance(entry, dict) and "name" in entry)]
    return _versions_and_urls(v) + _waits_and_downloads(v) + _etcd(v) + unnamed
