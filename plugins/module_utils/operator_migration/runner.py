# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the runner of the ``operator_migration_info`` module (read-only).

Reads, through the collection's ``Client``, one request per object or one paginated LIST per type: the manifest
install (calico-node's DaemonSet, calico-kube-controllers, ConfigMap calico-config, a Canal DaemonSet), the
IP pools of the datastore, the operator (its Deployment, Installation ``default`` with its computed spec,
calico-system's calico-node), the Nodes (metadata only: the operator's migration label), every policy-like kind
(``policy.POLICY_KINDS``) and the migration's record ConfigMap. The release's own manifest (``release_manifest``,
its text) is what the install is compared with. ``rules`` decides. It never writes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.manifest import load_documents
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import (
    applyable, container, env_value)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration import compare, customisations, installation, policy, rules

CRD_API = "crd.projectcalico.org/v1"
OPERATOR_API = "operator.tigera.io/v1"
# kind -> plural of what a Calico manifest holds (for the leftovers: one LIST per type and namespace)
PLURALS = {
    "ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps", "Secret": "secrets", "Service": "services",
    "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "Role": "roles",
    "RoleBinding": "rolebindings", "DaemonSet": "daemonsets", "Deployment": "deployments",
    "PodDisruptionBudget": "poddisruptionbudgets",
}


class ReleaseManifestError(Exception):
    """The release's manifest does not hold what the comparison needs."""


def release_objects(text, namespace, daemonset, kube_controllers, config_map):
    """The release manifest's calico-node DaemonSet, calico-kube-controllers Deployment and ConfigMap
    calico-config, and the reference of every object it holds (``(apiVersion, kind, namespace, name)``)."""
    docs = [d for d in load_documents(text or "") if isinstance(d, dict) and d.get("kind")]

    def find(kind, name):
        return next((d for d in docs if d.get("kind") == kind and (d.get("metadata") or {}).get("name") == name),
                    None)
    node = find("DaemonSet", daemonset)
    if node is None:
        raise ReleaseManifestError("operator migration: the release's manifest has no DaemonSet %s (is it calico.yaml "
                                   "of the running release?)" % daemonset)
    refs = []
    for d in docs:
        meta = d.get("metadata") or {}
        ns = meta.get("namespace") or (namespace if d["kind"] in PLURALS and d["kind"] not in (
            "ClusterRole", "ClusterRoleBinding") else None)
        refs.append((d.get("apiVersion"), d["kind"], ns, meta.get("name")))
    return {"node_ds": node, "kube_controllers": find("Deployment", kube_controllers),
            "config_map": find("ConfigMap", config_map), "refs": refs}


def read_policies(client):
    out = {}
    for api_version, plural in policy.POLICY_KINDS:
        items = client.list_or_none(api_version, plural)
        if items is not None:
            out["%s/%s" % (api_version, plural)] = items
    return out


def read_leftovers(client, refs):
    """The manifest's objects still there with no owner (``rules.leftovers``), each as ``{"ref", "object"}`` with the
    object cleaned to be applied again (what the record keeps before the removal): one LIST per type and namespace.
    Secrets are never among them (their data would not survive the record's redaction)."""
    by_type = {}
    for ref in refs:
        api_version, kind, ns, _name = ref
        if kind in PLURALS and kind != "Secret":
            by_type.setdefault((api_version, kind, ns), []).append(tuple(ref))
    live = {}
    for (api_version, kind, ns), wanted in sorted(by_type.items(), key=lambda x: json.dumps(x[0])):
        items = client.list_or_none(api_version, PLURALS[kind], namespace=ns) or []
        names = dict(((i.get("metadata") or {}).get("name"), i) for i in items)
        for ref in wanted:
            live[ref] = names.get(ref[3])
    kept = [list(ref) for ref in rules.leftovers([r for r in refs if tuple(r) in live], live, cluster_scoped=True)]
    return [{"ref": ref, "object": applyable(live[tuple(ref)], ref[0], ref[1])}
            for ref in rules.leftovers([r for r in refs if tuple(r) in live], live)], kept


def run_operator_migration_info(client, release_manifest, namespace="kube-system", daemonset="calico-node",
                                kube_controllers="calico-kube-controllers", config_map="calico-config",
                                operator_namespace="tigera-operator", operator_deployment="tigera-operator",
                                calico_namespace="calico-system", record_namespace="kube-system",
                                record_name="calico-ops-operator-migration", accept=(), version=None,
                                leftovers=False, policies=True):
    observed = observe(client, namespace, daemonset, kube_controllers, config_map, operator_namespace,
                       operator_deployment, calico_namespace)
    node_ds = observed["node_ds"]
    nodes = client.list("v1", "nodes", metadata_only=True)
    record = client.get("v1", "configmaps", record_name, namespace=record_namespace)
    record_data = (record or {}).get("data") or {}
    release = release_objects(release_manifest, namespace, daemonset, kube_controllers, config_map) \
        if release_manifest else None

    running_version = version or compare.calico_node_version(node_ds)
    found = judge_install(observed, release, accept)
    plan = rules.decide(observed, record_data.get("phase"), found["refusals"], running_version, found["datastore"])
    digest = policy.policy_digest(read_policies(client)) if policies else {}
    live_installation = observed["installation"]
    result = {
        "plan": plan,
        "names": {"node": "%s/%s" % (namespace, daemonset)},
        "calico_node": {"exists": node_ds is not None, "version": running_version, "datastore": found["datastore"]},
        "operator": {"exists": observed["operator"] is not None,
                     "node_ds": observed["operator_node_ds"] is not None},
        "installation": {"exists": live_installation is not None,
                         "computed": ((live_installation or {}).get("status") or {}).get("computed"),
                         "spec": (live_installation or {}).get("spec"), "differences": []},
        "nodes": rules.nodes_migrated(nodes, observed["operator_node_ds"]),
        "customisations": found["items"] + found["derive_problems"],
        "refusals": found["refusals"],
        "derived": found["derived"],
        "policies": policy.policy_counts(digest),
        "policy_digest": digest,
        "record": {"exists": record is not None, "phase": record_data.get("phase"), "data": record_data},
    }
    compare_with_record(result, record_data, digest if policies else None)
    if node_ds is not None:
        result["manifest_era"] = manifest_era(observed)
        result["services_endpoint"] = installation.services_endpoint(observed)
        result["manifest_refs"] = [list(r) for r in release["refs"]]
    if leftovers:
        refs = [list(r) for r in json.loads(record_data.get("manifest_refs") or "[]")] or \
            ([list(r) for r in release["refs"]] if release else [])
        result["leftovers"], result["kept"] = read_leftovers(client, refs)
    result["lines"] = rules.state_lines(result)
    return result


def observe(client, namespace, daemonset, kube_controllers, config_map, operator_namespace, operator_deployment,
            calico_namespace):
    """What the rules read of the cluster: the manifest install's workloads and ConfigMap, the IP pools,
    FelixConfiguration default, the operator, its Installation and its calico-node."""
    return {
        "node_ds": client.get("apps/v1", "daemonsets", daemonset, namespace=namespace),
        "kube_controllers": client.get("apps/v1", "deployments", kube_controllers, namespace=namespace),
        "config_map": client.get("v1", "configmaps", config_map, namespace=namespace),
        "canal": any(client.get("apps/v1", "daemonsets", n, namespace=namespace, metadata_only=True) is not None
                     for n in ("canal", "canal-node")),
        "ippools": client.list_or_none(CRD_API, "ippools") or [],
        # a GET of a type that is not served answers 404 too: None, like an object that does not exist
        "felix_default": client.get(CRD_API, "felixconfigurations", "default"),
        "installation": client.get(OPERATOR_API, "installations", "default"),
        "operator": client.get("apps/v1", "deployments", operator_deployment, namespace=operator_namespace),
        "operator_node_ds": client.get("apps/v1", "daemonsets", daemonset, namespace=calico_namespace),
    }


def judge_install(observed, release, accept):
    """While a manifest calico-node runs: its datastore, what it changed against the release (``items``), the
    Installation it amounts to (``derived``), what stops the derivation (``derive_problems``) and every refusal."""
    found = {"datastore": None, "items": [], "refusals": [], "derived": None, "derive_problems": []}
    node_ds = observed["node_ds"]
    if node_ds is None:
        return found
    datastore = found["datastore"] = env_value(container(node_ds, compare.NODE_CONTAINER),
                                               "DATASTORE_TYPE")[0] or "etcdv3"
    if release is None:
        raise ReleaseManifestError("operator migration: release_manifest is needed while a manifest calico-node "
                                   "runs (the release's calico.yaml, to tell what the install changed)")
    found["items"] = customisations.customisations(observed, release)
    problems = found["derive_problems"]
    try:
        found["derived"] = installation.derive_installation(observed, release)
    except ValueError as exc:
        problems.append({"where": "derived Installation", "name": "spec", "value": None, "refused": str(exc),
                         "fix": "change the install so that an Installation can express it"})
    if datastore == "kubernetes" and not installation.select_pool(observed["ippools"]) \
            and not installation.select_pool(observed["ippools"], v6=True):
        problems.append({"where": "IP pools", "name": "ippools", "value": None,
                         "refused": "no enabled IP pool in the datastore (calico-node creates the default one when "
                         "it starts)", "fix": "wait for calico-node, or create the pool"})
    if datastore == "kubernetes" and observed["felix_default"] is None:
        # the operator's converter moves calico-node's FELIX_* settings into it, and fails without it (seen:
        # TigeraStatus calico Degraded, MigrationError "error reading felixconfiguration ... not found")
        problems.append({"where": "FelixConfiguration", "name": "default", "value": None,
                         "refused": "FelixConfiguration default does not exist (calico-node creates it when it "
                         "starts; the operator's conversion needs it)",
                         "fix": "wait for calico-node to start, or create FelixConfiguration default"})
    found["refusals"] = customisations.refused(found["items"], accept) + problems
    return found


def compare_with_record(result, record_data, digest):
    """The Installation and the policies as the record kept them before the operator acted, against now
    (``digest`` None: the policies were not read)."""
    if record_data.get("installation") and result["installation"]["computed"]:
        try:
            result["installation"]["differences"] = installation.installation_differences(
                json.loads(record_data["installation"]), result["installation"]["computed"])
        except ValueError:
            result["installation"]["differences"] = ["the record's Installation is not readable JSON"]
    if record_data.get("policies") and digest is not None:
        try:
            result["policy_changes"] = policy.policy_changes(json.loads(record_data["policies"]), digest)
        except ValueError:
            result["policy_changes"] = ["the record's policies are not readable JSON"]


def manifest_era(observed):
    """The manifest install's calico-node, calico-kube-controllers and calico-config as they are, cleaned for a
    later apply (no status, no server-set metadata): what the record keeps before the operator acts."""
    return [applyable(o) for o in (observed.get("node_ds"), observed.get("kube_controllers"),
                                   observed.get("config_map")) if o]
