# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure rules of the move of a manifest install to the Tigera operator (Calico's documentation: "Migrate Calico
to an operator-managed installation"). No I/O: the runner reads, these decide. The rules live in four modules:

* ``customisations`` (customisations.py): what the running manifest install changed against the same release's own
  manifest, each with what it becomes under the operator or why the operator cannot carry it;
* ``derive_installation`` (installation.py): the Installation ``spec`` the running install amounts to;
* ``policy_digest`` / ``policy_changes`` (policy.py): every policy-like object reduced to a hash of what it
  enforces, before and after;
* here: ``leftovers`` (the manifest's objects the operator leaves to the user once it has moved calico-node: no
  owner, still there; never a CRD or a namespace), ``nodes_migrated``, and ``decide`` (the phase and the next action,
  from what the cluster and the record say); compare.py holds the readers they share.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import count
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration.compare import MIGRATION_LABEL, parse_version
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration.customisations import item_line


# the oldest release whose operator can take over a manifest install (the operator's migration arrived with v3.15)
MINIMUM_VERSION = (3, 15, 0)


# kinds of the manifest never removed as leftovers, whatever is left of them
NEVER_LEFTOVER = ("CustomResourceDefinition", "Namespace")


PHASES = ("manifest", "recorded", "operator", "installation", "migrated", "verified", "done", "operator-managed")


def leftovers(manifest_refs, live, cluster_scoped=False):
    """The manifest's objects still there with no owner (the operator took over what it renders: those carry an
    ownerReference to the Installation, or were deleted by it). ``manifest_refs``: ``[(apiVersion, kind,
    namespace, name)]``; ``live``: ``{ref: object or None}``. Namespaced objects only (those of the manifest's
    namespace, read by the manifest's pods alone), unless ``cluster_scoped``: then the cluster-scoped ones only
    (RBAC objects another component may still use: listed, never removed)."""
    out = []
    for ref in manifest_refs:
        if ref[1] in NEVER_LEFTOVER or bool(ref[2]) == cluster_scoped:
            continue
        obj = live.get(tuple(ref))
        if obj is None:
            continue
        if (obj.get("metadata") or {}).get("ownerReferences"):
            continue
        out.append(list(ref))
    return out


def nodes_migrated(nodes, operator_ds):
    """How many nodes run the operator's calico-node (ready pods of calico-system's DaemonSet) out of all."""
    status = (operator_ds or {}).get("status") or {}
    return {"total": len(nodes or []), "ready": count(status.get("numberReady")),
            "desired": count(status.get("desiredNumberScheduled")),
            "labelled": sorted(n["metadata"]["name"] for n in nodes or []
                               if MIGRATION_LABEL in ((n.get("metadata") or {}).get("labels") or {}))}


def decide(observed, record_phase, refusals, version, datastore):
    """``{"action": migrate|nothing|refuse, "phase": ..., "reason": ...}``.

    Phases: ``manifest`` (nothing done), ``recorded`` (the manifest-era objects saved), ``operator`` (the operator
    installed), ``installation`` (the Installation applied: the operator moves calico-node node by node),
    ``migrated`` (no calico-node left in the manifest's namespace), ``verified``, ``done``; ``operator-managed``
    when there is no manifest install and no migration of this playbook to finish."""
    node_ds, installation = observed.get("node_ds"), observed.get("installation")
    if record_phase == "done" and node_ds is None:
        return {"action": "nothing", "phase": "done", "reason": "the migration is done (recorded)"}
    if node_ds is None:
        if record_phase in ("installation", "migrated", "verified") and installation is not None:
            return {"action": "migrate", "phase": "migrated" if record_phase == "installation" else record_phase,
                    "reason": "calico-node has left the manifest's namespace; verifying and cleaning up"}
        if installation is not None or observed.get("operator_node_ds") is not None:
            return {"action": "nothing", "phase": "operator-managed",
                    "reason": "Calico is operator-managed already (no manifest calico-node)"}
        return {"action": "refuse", "phase": "manifest", "reason": "no calico-node DaemonSet in the manifest's "
                "namespace: nothing to migrate (is Calico installed with manifests here?)"}
    if observed.get("canal"):
        return {"action": "refuse", "phase": "manifest", "reason": "a Canal install (DaemonSet canal or canal-node): "
                "the operator's migration supports Calico's own manifests only"}
    if datastore != "kubernetes":
        return {"action": "refuse", "phase": "manifest", "reason": "calico-node uses the etcd datastore; the "
                "operator supports the Kubernetes datastore only: migrate the datastore first "
                "(playbooks/migrate_datastore.yml)"}
    parsed = parse_version(version)
    if parsed is None:
        return {"action": "refuse", "phase": "manifest", "reason": "calico-node's image tag %r is not a Calico "
                "release (vX.Y.Z); give operator_migration_version" % version}
    if parsed < MINIMUM_VERSION:
        return {"action": "refuse", "phase": "manifest", "reason": "Calico %s is older than v3.15, the first "
                "release whose operator can take over a manifest install: upgrade it first" % version}
    if installation is not None and not record_phase:
        return {"action": "refuse", "phase": "manifest", "reason": "Installation default exists but this playbook "
                "has no record of creating it, while calico-node still runs from the manifest: finish or undo "
                "that migration by hand first (kubectl get tigerastatus)"}
    if refusals:
        return {"action": "refuse", "phase": record_phase or "manifest",
                "reason": "the install has customisations the operator cannot carry: %s" % "; ".join(
                    item_line(i) for i in refusals)}
    if installation is not None:
        return {"action": "migrate", "phase": "installation",
                "reason": "the operator is moving calico-node (Installation default exists)"}
    if observed.get("operator") is not None and record_phase in ("recorded", "operator"):
        return {"action": "migrate", "phase": "operator", "reason": "the operator is installed; the Installation "
                "is next"}
    if record_phase in ("recorded", "operator"):
        return {"action": "migrate", "phase": "recorded", "reason": "the manifest-era objects are recorded; the "
                "operator is next"}
    return {"action": "migrate", "phase": "manifest", "reason": "a manifest install of Calico %s" % version}


def state_lines(result):
    plan = result["plan"]
    lines = ["calico-node (%s): %s, Calico %s, %s datastore" % (
        result["names"]["node"], "present" if result["calico_node"]["exists"] else "absent",
        result["calico_node"].get("version"), result["calico_node"].get("datastore"))]
    lines.append("operator: %s; Installation default: %s; operator calico-node: %s" % (
        "installed" if result["operator"]["exists"] else "not installed",
        "present" if result["installation"]["exists"] else "absent",
        "%(ready)d of %(total)d nodes ready" % result["nodes"] if result["operator"]["node_ds"] else "absent"))
    for item in result["customisations"]:
        lines.append("customisation: " + item_line(item))
    lines.append("policies: %s" % ", ".join("%s %d" % (k, v) for k, v in sorted(result["policies"].items())))
    lines.append("record: %s" % (result["record"]["phase"] or "none"))
    lines.append("plan: %s from phase %s (%s)" % (plan["action"], plan["phase"], plan["reason"]))
    return lines
