# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every policy-like object (Calico's and Kubernetes') reduced to a hash of what it enforces, before and after the
move to the operator, so the migration proves it left them as they were. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json


# the policy-like objects the migration must leave as they were: (apiVersion, plural)
POLICY_KINDS = (
    ("crd.projectcalico.org/v1", "networkpolicies"),
    ("crd.projectcalico.org/v1", "globalnetworkpolicies"),
    ("crd.projectcalico.org/v1", "stagednetworkpolicies"),
    ("crd.projectcalico.org/v1", "stagedglobalnetworkpolicies"),
    ("crd.projectcalico.org/v1", "networksets"),
    ("crd.projectcalico.org/v1", "globalnetworksets"),
    ("crd.projectcalico.org/v1", "tiers"),
    ("networking.k8s.io/v1", "networkpolicies"),
)


def _enforced(obj):
    meta = obj.get("metadata") or {}
    return json.dumps({"labels": meta.get("labels") or {}, "spec": obj.get("spec") or {}}, sort_keys=True)


def policy_digest(objects_by_kind):
    """``{"<apiVersion>/<plural>": {"<ns/name>": hash12}}`` of what each object enforces (labels and spec)."""
    out = {}
    for kind, objects in sorted((objects_by_kind or {}).items()):
        entries = {}
        for obj in objects or []:
            meta = obj.get("metadata") or {}
            key = "%s/%s" % (meta["namespace"], meta["name"]) if meta.get("namespace") else meta.get("name")
            entries[key] = hashlib.sha256(_enforced(obj).encode()).hexdigest()[:16]
        out[kind] = entries
    return out


def policy_changes(before, after):
    """What is missing, new or different after the migration, per kind: one line each."""
    out = []
    for kind in sorted(set(before or {}) | set(after or {})):
        b, a = (before or {}).get(kind) or {}, (after or {}).get(kind) or {}
        for key in sorted(set(b) - set(a)):
            out.append("%s %s: gone" % (kind, key))
        for key in sorted(set(a) - set(b)):
            out.append("%s %s: new" % (kind, key))
        for key in sorted(set(a) & set(b)):
            if a[key] != b[key]:
                out.append("%s %s: changed" % (kind, key))
    return out


def policy_counts(digest):
    return dict((kind, len(entries)) for kind, entries in sorted((digest or {}).items()))
