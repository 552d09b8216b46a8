# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The owner references job's rules, as pure functions: the record's entry keys, the JSON patch that tests
an object's UID and current ``ownerReferences`` before it changes them, and the messages. Calico's
documentation: "Upgrade Calico on Kubernetes", section on the v3.28 ``projectcalico.org/v3`` UID change
(owner references to Calico objects must be removed before the upgrade and added back after).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


JOB = "owner_references"
DEFAULT_OWNER_API_VERSIONS = ["projectcalico.org/v3"]
DEFAULT_RECORD_NAMESPACE = "kube-system"
DEFAULT_RECORD_NAME = "calico-ops-owner-references"
PATCH_RETRIES = 6
# attach saves the record after every CHECKPOINT_EVERY entries done, at most once per CHECKPOINT_SECONDS
# (and always after 10 * CHECKPOINT_EVERY); a run killed in between redoes nothing: it finds those
# references in place and only marks them done
CHECKPOINT_EVERY = 100
CHECKPOINT_SECONDS = 1.0
# ... and at most once per this many times the last checkpoint's own duration (a record of thousands of entries
# takes a few hundred milliseconds to save: its checkpoints then come every few seconds, not every second)
CHECKPOINT_COST_SHARE = 10
# attach's patches started beyond the dependent being booked: enough to keep the API server busy while the main
# thread saves a checkpoint (a checkpoint of a few hundred milliseconds stopped the patches with 4 x workers ahead:
# benchmarks/results/design-measurements.md). Bounded by the most entries between
# two checkpoints. A run killed meanwhile finds those references in place and only marks them done.
ATTACH_AHEAD = 10 * CHECKPOINT_EVERY
PREFETCH_MIN = 10  # dependents of one type in one namespace from which attach LISTs them instead of GETs


class OwnerReferencesError(Exception):
    """The job stopped or finished with failures; ``result`` is what it did and found."""

    def __init__(self, message, result):
        super(OwnerReferencesError, self).__init__(message)
        self.result = result


def group_of(api_version):
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def entry_key(dependent_uid, ref):
    """A stable key: the dependent and the exact reference (the owner UID included, so a later cycle
    that detaches the re-attached reference makes a new entry)."""
    return "|".join([dependent_uid, ref.get("apiVersion") or "", ref.get("kind") or "",
                     ref.get("name") or "", ref.get("uid") or ""])


def same_owner(a, b):
    return (group_of(a.get("apiVersion") or "") == group_of(b.get("apiVersion") or "")
            and a.get("kind") == b.get("kind") and a.get("name") == b.get("name"))


def owner_brief(ref):
    return dict((k, ref.get(k)) for k in ("apiVersion", "kind", "name", "uid"))


def refs_patch(uid, current, new, resource_version):
    """A JSON patch replacing the ownerReferences, guarded by tests of the UID and the current value."""
    ops = [{"op": "test", "path": "/metadata/uid", "value": uid}]
    if current is None:
        # no ownerReferences field: a test cannot assert absence, the resourceVersion guards instead
        ops.append({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version})
        if new:
            ops.append({"op": "add", "path": "/metadata/ownerReferences", "value": new})
        return ops
    ops.append({"op": "test", "path": "/metadata/ownerReferences", "value": current})
    if new:
        ops.append({"op": "replace", "path": "/metadata/ownerReferences", "value": new})
    else:
        ops.append({"op": "remove", "path": "/metadata/ownerReferences"})
    return ops


def describe_object(obj):
    """``Kind namespace/name`` (``Kind name`` when cluster-scoped) of a record's dependent."""
    return "%s %s%s" % (obj.get("kind"), (obj["namespace"] + "/") if obj.get("namespace") else "", obj.get("name"))


def missing_owners_message(missing):
    """One line naming every dependent left without an owner reference, with the owner it lost."""
    by_dependent = {}
    order = []
    for m in missing:
        label = describe_object(m["dependent"])
        if label not in by_dependent:
            by_dependent[label] = []
            order.append(label)
        by_dependent[label].append(m["reason"])
    return ("%d owner reference(s) were left out because the owner is missing (they stay pending in the record); "
            "%d dependent(s) are without them: %s" % (
                len(missing), len(order), "; ".join("%s: owner %s" % (label, ", owner ".join(by_dependent[label]))
                                                    for label in order)))
