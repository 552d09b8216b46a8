# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the runner of the ``datastore_migration_info`` module (read-only).

Reads, through the collection's ``Client``: calico-node's DaemonSet (its DATASTORE_TYPE), the
``crd.projectcalico.org`` CRDs and whether each holds any object (one LIST with ``limit=1`` per CRD: the
count is the page plus ``remainingItemCount``), ClusterInformation ``default`` of the Kubernetes datastore, and
the migration's record ConfigMap. Through real calicoctl (``calicoctl_run(argv) -> (rc, stdout, stderr)``): the
etcd datastore's ClusterInformation (its lock) and, when asked to compare, every kind the export carries in
both datastores. ``rules`` decides. It never writes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.datastore_migration import rules

CRD_GROUP = "crd.projectcalico.org"
CRD_API = CRD_GROUP + "/v1"
# the Kubernetes datastore's own objects that are not Calico data (none of them stops an import)
NOT_DATA = ("clusterinformations",)


class CalicoctlError(Exception):
    """calicoctl failed; the message is one line naming the command and its reason."""


def _first_line(text):
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def calicoctl_json(run, calicoctl, config, args, datastore, missing_ok=False):
    if not config:
        raise CalicoctlError("calicoctl %s (%s datastore): no configuration for it - the etcd endpoints are unknown "
                             "(give them: datastore_migration_etcd_endpoints)" % (" ".join(args), datastore))
    argv = [calicoctl] + list(args) + ["-o", "json", "--config", config]
    rc, out, err = run(argv)
    if rc != 0:
        reason = _first_line(err or out)
        if missing_ok and "does not exist" in reason:
            return None
        raise CalicoctlError("calicoctl %s (%s datastore) failed: %s" % (" ".join(args), datastore, reason))
    try:
        return json.loads(out) if (out or "").strip() else None
    except ValueError:
        raise CalicoctlError("calicoctl %s (%s datastore) printed no JSON: %s" % (
            " ".join(args), datastore, _first_line(out)))


def calicoctl_list(run, calicoctl, config, plural, namespaced, datastore):
    data = calicoctl_json(run, calicoctl, config, ["get", plural] + (["--all-namespaces"] if namespaced else []),
                          datastore)
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        return data.get("items") if "items" in data else [data]
    return []


def read_all(run, calicoctl, config, datastore):
    return dict((plural, calicoctl_list(run, calicoctl, config, plural, namespaced, datastore) or [])
                for plural, _kind, namespaced in rules.KINDS)


def kdd_state(client):
    """``(crds, held, locked)``: the plurals of the served ``crd.projectcalico.org`` CRDs, the ones holding
    objects (plural -> count) and the lock of ClusterInformation ``default`` (None: there is none)."""
    crds = client.list("apiextensions.k8s.io/v1", "customresourcedefinitions")
    plurals = sorted(c["spec"]["names"]["plural"] for c in crds if (c.get("spec") or {}).get("group") == CRD_GROUP)
    held = {}
    for plural in plurals:
        if plural in NOT_DATA:
            continue
        page = client.request("GET", "/apis/%s/%s" % (CRD_API, plural), query={"limit": "1"}) or {}
        count = len(page.get("items") or []) + int((page.get("metadata") or {}).get("remainingItemCount") or 0)
        if count:
            held[plural] = count
    locked = None
    if "clusterinformations" in plurals:
        info = client.get(CRD_API, "clusterinformations", "default")
        if info is not None:
            locked = not (info.get("spec") or {}).get("datastoreReady", False)
    return plurals, held, locked


def run_datastore_migration_info(client, run, calicoctl, etcd_config, kubernetes_config=None,
                                 namespace="kube-system", daemonset="calico-node", record_namespace="kube-system",
                                 record_name="calico-ops-datastore-migration", compare=False, abort=False,
                                 take_over_lock=False, deployments=(), config_map="calico-config"):
    ds = client.get("apps/v1", "daemonsets", daemonset, namespace=namespace)
    node_datastore = rules.calico_node_datastore(ds)
    crds, held, kdd_locked = kdd_state(client)
    record = client.get("v1", "configmaps", record_name, namespace=record_namespace)
    record_data = (record or {}).get("data") or {}

    etcd = {"locked": None, "cluster_version": None, "nodes_without_k8s_name": [], "not_exported": []}
    if node_datastore == "etcdv3" or (node_datastore is not None and kdd_locked):
        info = calicoctl_json(run, calicoctl, etcd_config, ["get", "clusterinformation", "default"], "etcd",
                              missing_ok=True)
        if info:
            etcd["locked"] = not (info.get("spec") or {}).get("datastoreReady", False)
            etcd["cluster_version"] = (info.get("spec") or {}).get("calicoVersion") or None

    plan = rules.decide(node_datastore, etcd["locked"], kdd_locked, held, record_data.get("phase"), abort=abort,
                        take_over_lock=take_over_lock)
    result = {
        "plan": plan,
        "calico_node": {"exists": ds is not None, "datastore": node_datastore},
        "etcd": etcd,
        "kubernetes": {"crds": len(crds), "held": held, "locked": kdd_locked},
        "record": {"exists": record is not None, "phase": record_data.get("phase"), "data": record_data},
    }
    result["lines"] = rules.state_lines(result)
    if node_datastore == "etcdv3":
        result["workloads"] = workloads(client, namespace, ds, deployments, config_map)
    if compare:
        source = read_all(run, calicoctl, etcd_config, "etcd")
        target = read_all(run, calicoctl, kubernetes_config, "Kubernetes")
        mapping, _missing = rules.node_map(source.get("nodes"))
        comparison = rules.compare(source, target, mapping)
        result["comparison"] = dict(comparison, problems=rules.problems_of(comparison),
                                    lines=rules.lines_of(comparison))
    elif plan["action"] == "migrate" and node_datastore == "etcdv3":
        source = dict((p, calicoctl_list(run, calicoctl, etcd_config, p, p != "nodes", "etcd"))
                      for p in ("nodes",) + rules.EXPORTED_IN_DEFAULT_ONLY)
    else:
        source = None
    if source is not None:
        etcd["nodes_without_k8s_name"] = rules.node_map(source.get("nodes"))[1]
        etcd["not_exported"] = rules.missing_from_export(source)
    return result


def workloads(client, namespace, daemonset, deployments, config_map):
    """calico-node's DaemonSet, the Deployments and the ConfigMap as they are (etcd era), cleaned for an apply:
    what the way back restores."""
    objects = [("apps/v1", "DaemonSet", daemonset)]
    for name in deployments or ():
        objects.append(("apps/v1", "Deployment", client.get("apps/v1", "deployments", name, namespace=namespace)))
    objects.append(("v1", "ConfigMap", client.get("v1", "configmaps", config_map, namespace=namespace)))
    return [rules.clean_workload(api_version, kind, obj) for api_version, kind, obj in objects if obj]
