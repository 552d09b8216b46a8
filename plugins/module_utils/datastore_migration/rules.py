# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure rules of the etcd -> Kubernetes datastore migration (Calico's documentation: "Migrate Calico data from
an etcdv3 datastore to a Kubernetes datastore"). No I/O: the runner reads, these decide.

* ``KINDS``: the resource kinds ``calicoctl datastore migrate export`` carries (its ``allV3Resources``, v3.31),
  in its order, with whether each is namespaced.
* ``comparable``: the objects of one kind that the migration moves (policies Calico derives from Kubernetes
  NetworkPolicies and (Baseline)AdminNetworkPolicies are not exported: they are left out on both sides).
* ``node_map``: etcd Calico Node name -> Kubernetes node name (the ``k8s`` orchestrator reference, as the export
  renames them); ``rename``: the names the export rewrites (Nodes, ``node.<name>`` Felix and BGP configurations).
* ``compare``: per kind, what the Kubernetes datastore lacks or holds differently from etcd. The source must be
  contained in the target: every label and every spec field of the source object, with the same value (the
  Kubernetes datastore may add defaults, and derives Nodes from the Kubernetes Node objects).
* ``decide``: the phase and the next action, from what the datastores, calico-node and the record say.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import applyable

# (plural for calicoctl, kind, namespaced): calicoctl/commands/datastore/migrate/export.go allV3Resources
KINDS = (
    ("ippools", "IPPool", False),
    ("bgppeers", "BGPPeer", False),
    ("tiers", "Tier", False),
    ("globalnetworkpolicies", "GlobalNetworkPolicy", False),
    ("stagedglobalnetworkpolicies", "StagedGlobalNetworkPolicy", False),
    ("globalnetworksets", "GlobalNetworkSet", False),
    ("hostendpoints", "HostEndpoint", False),
    ("kubecontrollersconfigurations", "KubeControllersConfiguration", False),
    ("networkpolicies", "NetworkPolicy", True),
    ("stagednetworkpolicies", "StagedNetworkPolicy", True),
    ("stagedkubernetesnetworkpolicies", "StagedKubernetesNetworkPolicy", True),
    ("networksets", "NetworkSet", True),
    ("nodes", "Node", False),
    ("bgpconfigurations", "BGPConfiguration", False),
    ("felixconfigurations", "FelixConfiguration", False),
    ("ipreservations", "IPReservation", False),
    ("bgpfilters", "BGPFilter", False),
)
PLURALS = tuple(k[0] for k in KINDS)
# libcalico-go/lib/names/policy.go: policies the Kubernetes datastore derives from Kubernetes objects
DERIVED_PREFIXES = {
    "networkpolicies": ("knp.default.",),
    "globalnetworkpolicies": ("kanp.adminnetworkpolicy.", "kbanp.baselineadminnetworkpolicy."),
}
# Kubernetes datastore: Calico Nodes are the Kubernetes Nodes; only what Calico keeps of its own is compared
NODE_SPEC_KEYS = ("bgp", "ipv4VXLANTunnelAddr", "ipv6VXLANTunnelAddr", "vxlanTunnelMACAddr",
                  "vxlanTunnelMACAddrV6", "wireguard")
NODE_CONFIG_KINDS = ("felixconfigurations", "bgpconfigurations")

# calicoctl v3.31's export passes --all-namespaces for NetworkPolicies and NetworkSets only: these namespaced
# kinds are exported from namespace "default" alone (seen with v3.31.4); the role carries the others itself
EXPORTED_IN_DEFAULT_ONLY = ("stagednetworkpolicies", "stagedkubernetesnetworkpolicies")

PHASES = ("etcd", "locked", "partial", "imported", "switched", "done", "kubernetes", "aborted")


def key(obj):
    meta = obj.get("metadata") or {}
    return "%s/%s" % (meta["namespace"], meta["name"]) if meta.get("namespace") else meta.get("name", "")


def comparable(plural, objects):
    prefixes = DERIVED_PREFIXES.get(plural, ())
    return [o for o in objects or [] if not ((o.get("metadata") or {}).get("name") or "").startswith(prefixes)]


def clean(obj):
    """An object as ``calicoctl apply`` takes it (no uid, resourceVersion, creation time)."""
    meta = obj.get("metadata") or {}
    out = {"apiVersion": obj.get("apiVersion", "projectcalico.org/v3"), "kind": obj.get("kind"),
           "metadata": dict((k, meta[k]) for k in ("name", "namespace", "labels", "annotations") if meta.get(k))}
    if "spec" in obj:
        out["spec"] = obj["spec"]
    return out


def clean_workload(api_version, kind, obj):
    """A live Kubernetes object as a document to apply again (``calico.objects.applyable``)."""
    return applyable(obj, api_version, kind)


def missing_from_export(source):
    """The objects of ``source`` (per plural) that calicoctl's export leaves out (``EXPORTED_IN_DEFAULT_ONLY``
    outside namespace ``default``), cleaned for ``calicoctl apply``."""
    out = []
    for plural in EXPORTED_IN_DEFAULT_ONLY:
        for obj in comparable(plural, source.get(plural)):
            if (obj.get("metadata") or {}).get("namespace", "default") != "default":
                out.append(clean(obj))
    return out


def node_map(etcd_nodes):
    """etcd Calico Node name -> its ``k8s`` orchestrator reference's nodeName (the export's own mapping), and
    the names of the nodes that have none (``calicoctl datastore migrate export`` refuses them)."""
    mapping, missing = {}, []
    for node in etcd_nodes or []:
        name = (node.get("metadata") or {}).get("name")
        refs = [r.get("nodeName") for r in (node.get("spec") or {}).get("orchRefs") or []
                if r.get("orchestrator") == "k8s" and r.get("nodeName")]
        if refs:
            mapping[name] = refs[-1]
        else:
            missing.append(name)
    return mapping, sorted(missing)


def rename(plural, name, mapping):
    """The name an etcd object has after the export (Nodes and per-node configurations follow the node map)."""
    if plural == "nodes":
        return mapping.get(name, name)
    if plural in NODE_CONFIG_KINDS and name.startswith("node."):
        node = name[len("node."):]
        return "node." + mapping.get(node, node)
    return name


def contained(source, target, path=""):
    """The first path where ``target`` does not hold ``source`` (dicts: every key of the source; lists and
    scalars: equal), or None."""
    if isinstance(source, dict) and isinstance(target, dict):
        for k in sorted(source):
            where = contained(source[k], target.get(k), "%s.%s" % (path, k) if path else k)
            if where is not None:
                return where
        return None
    if isinstance(source, dict) and not source and target is None:
        return None
    return None if source == target else (path or "(value)")


def _view(plural, obj):
    spec = obj.get("spec") or {}
    if plural == "nodes":
        spec = dict((k, spec[k]) for k in NODE_SPEC_KEYS if k in spec)
    return {"labels": (obj.get("metadata") or {}).get("labels") or {}, "spec": spec}


def compare(source_by_kind, target_by_kind, mapping=None):
    """Per kind: ``source``/``target`` counts, ``missing`` keys, ``different`` (key: first differing path) and
    ``extra`` keys (in the Kubernetes datastore only: defaults it creates, Nodes of its own). ``ok`` when
    nothing is missing or different in any kind."""
    mapping = mapping or {}
    kinds, ok = {}, True
    for plural in PLURALS:
        source = comparable(plural, source_by_kind.get(plural))
        target = dict((key(o), o) for o in comparable(plural, target_by_kind.get(plural)))
        missing, different, seen = [], {}, set()
        for obj in source:
            meta = obj.get("metadata") or {}
            name = rename(plural, meta.get("name", ""), mapping)
            k = "%s/%s" % (meta["namespace"], name) if meta.get("namespace") else name
            seen.add(k)
            other = target.get(k)
            if other is None:
                missing.append(k)
                continue
            where = contained(_view(plural, obj), _view(plural, other))
            if where is not None:
                different[k] = where
        extra = sorted(k for k in target if k not in seen)
        kinds[plural] = {"source": len(source), "target": len(target), "missing": sorted(missing),
                         "different": different, "extra": extra}
        ok = ok and not missing and not different
    return {"ok": ok, "kinds": kinds}


def lines_of(comparison):
    """One line per kind etcd holds: its count on both sides."""
    out = []
    for plural in PLURALS:
        k = (comparison.get("kinds") or {}).get(plural)
        if k and k["source"]:
            out.append("%s: %d in etcd, %d in the Kubernetes datastore%s" % (
                plural, k["source"], k["target"], "" if not (k["missing"] or k["different"]) else " (not whole)"))
    return out


def problems_of(comparison):
    """One line per kind that is not carried over whole."""
    out = []
    for plural in PLURALS:
        k = (comparison.get("kinds") or {}).get(plural)
        if not k or (not k["missing"] and not k["different"]):
            continue
        parts = []
        if k["missing"]:
            parts.append("missing " + ", ".join(k["missing"][:10]) + (" ..." if len(k["missing"]) > 10 else ""))
        if k["different"]:
            parts.append("different " + ", ".join("%s (%s)" % kv for kv in sorted(k["different"].items())[:10]))
        out.append("%s: %d in etcd, %d in the Kubernetes datastore; %s" % (plural, k["source"], k["target"],
                                                                           "; ".join(parts)))
    return out


def calico_node_datastore(daemonset, container="calico-node"):
    """``etcdv3`` or ``kubernetes`` from calico-node's DATASTORE_TYPE (unset: calico-node's default, etcdv3), or
    None when there is no such DaemonSet or container."""
    if not daemonset:
        return None
    containers = ((((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    for c in containers:
        if c.get("name") == container:
            for env in c.get("env") or []:
                if env.get("name") == "DATASTORE_TYPE":
                    return env.get("value") or "etcdv3"
            return "etcdv3"
    return None


def decide(node_datastore, etcd_locked, kdd_locked, kdd_resources, record_phase, abort=False,
           take_over_lock=False):
    """``{"phase", "action", "reason"}``. ``action``: ``migrate`` (go on from ``phase``), ``nothing``, ``abort``
    or ``refuse``. ``kdd_resources``: the kinds (with counts) the Kubernetes datastore already holds;
    ``record_phase``: the last phase the role recorded (``None``: no record)."""
    recorded = record_phase or None
    held = ", ".join("%s %d" % kv for kv in sorted((kdd_resources or {}).items()))
    if node_datastore is None:
        return _plan("etcd", "refuse", "calico-node was not found: this migration is for manifest installs of "
                     "Calico on the etcd datastore (set the DaemonSet's namespace and name if they differ)")
    if node_datastore == "kubernetes":
        if kdd_locked:
            if abort:
                return _plan("switched", "abort", "calico-node runs on the Kubernetes datastore, which is still "
                             "locked: it goes back to etcd")
            return _plan("switched", "migrate", "calico-node runs on the Kubernetes datastore; it is still locked")
        if recorded in ("imported", "switched", "done"):
            if abort:
                return _plan("done", "refuse", "the Kubernetes datastore was unlocked: the migration cannot be "
                             "rolled back (Calico's documentation)")
            return _plan("done", "nothing", "the migration is complete: calico-node runs on the Kubernetes "
                         "datastore, unlocked")
        return _plan("kubernetes", "refuse" if abort else "nothing",
                     "Calico already uses the Kubernetes datastore (calico-node's DATASTORE_TYPE): nothing to "
                     "migrate")
    # calico-node on etcd
    if abort:
        if recorded in (None, "aborted") and not etcd_locked:
            return _plan("etcd", "nothing", "no migration to abort: etcd is unlocked and nothing was recorded")
        return _plan(recorded or "locked", "abort", "etcd is made authoritative and unlocked again")
    if recorded == "aborted" and not etcd_locked and not kdd_resources:
        recorded = None
    if kdd_resources:
        if recorded in ("imported", "switching"):
            return _plan("imported", "migrate", "the import is complete; verify and switch calico-node")
        if recorded in ("import-started", "locked"):
            return _plan("partial", "migrate", "an earlier import was cut (%s): the Kubernetes datastore's "
                         "Calico resources are removed and the import is made again" % held)
        return _plan("etcd", "refuse", "the Kubernetes datastore already holds Calico resources (%s) that this "
                     "migration did not import: calicoctl datastore migrate import refuses them; remove them "
                     "(delete the crd.projectcalico.org CRDs) only if nothing uses them" % held)
    if etcd_locked:
        if not recorded and not take_over_lock:
            return _plan("locked", "refuse", "etcd is locked, and not by this migration (no record of it): another "
                         "migration may be under way; unlock it (calicoctl datastore migrate unlock) or set "
                         "datastore_migration_take_over_lock to true to go on from its lock")
        return _plan("locked", "migrate", "etcd is locked%s" % ("" if recorded else " (lock taken over)"))
    return _plan("etcd", "migrate", "calico-node runs on etcd, unlocked")


def _lock(value, absent):
    return {True: "locked", False: "unlocked"}.get(value, absent)


def state_lines(state):
    """What was read, one line per part, for the report."""
    kdd = state["kubernetes"]
    held = ", ".join("%s %d" % kv for kv in sorted(kdd["held"].items())) or "nothing"
    return ["calico-node: %s" % ((state["calico_node"]["datastore"] or "not found") + " datastore"),
            "etcd: %s, Calico %s" % (_lock(state["etcd"]["locked"], "not read"),
                                     state["etcd"]["cluster_version"] or "?"),
            "Kubernetes datastore: %d Calico CRDs, holding %s; %s" % (
                kdd["crds"], held, _lock(kdd["locked"], "no ClusterInformation")),
            "record: %s" % (state["record"]["phase"] or "none"),
            "plan: %s from %s: %s" % (state["plan"]["action"], state["plan"]["phase"], state["plan"]["reason"])]


def _plan(phase, action, reason):
    return {"phase": phase, "action": action, "reason": reason}
