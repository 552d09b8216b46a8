# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure rules of the move of a manifest install to the Tigera operator (Calico's documentation: "Migrate Calico
to an operator-managed installation"). No I/O: the runner reads, these decide.

* ``customisations``: what the running manifest install changed against the same release's own manifest
  (calico-node's env, image registry, volumes, init containers, args, node selector, affinity, tolerations,
  annotations, resources; calico-kube-controllers' env and node selector; the CNI configuration), each with what
  it becomes under the operator (``maps_to``) or why the operator cannot carry it (``refused``, with the fix).
  The classes follow what the operator's own converter of a manifest install accepts
  (``pkg/controller/migration/convert`` of the Tigera operator): what it refuses is refused here before any write,
  so the operator never meets an install it would leave Degraded with a MigrationError.
* ``derive_installation``: the Installation ``spec`` the running install amounts to (IP pools as the datastore has
  them, MTU, encapsulation, BGP, node address autodetection, registry and image path, the control plane node
  selector, FlexVolume path, CNI and IPAM, the Linux data plane) - what the operator's converter derives, so the
  spec the playbook applies changes nothing the install runs with.
* ``policy_digest`` / ``policy_changes``: every policy-like object (Calico's and Kubernetes') reduced to a hash
  of what it enforces, before and after, so the migration proves it left them as they were.
* ``leftovers``: the manifest's objects the operator leaves to the user once it has moved calico-node (no owner,
  still there), never a CRD or a namespace.
* ``decide``: the phase and the next action, from what the cluster and the record say.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import container, env_value, pod_spec

NODE_CONTAINER = "calico-node"
CNI_CONTAINER = "install-cni"
MIGRATION_LABEL = "projectcalico.org/operator-node-migration"
OS_SELECTORS = ("kubernetes.io/os", "beta.kubernetes.io/os")
# the oldest release whose operator can take over a manifest install (the operator's migration arrived with v3.15)
MINIMUM_VERSION = (3, 15, 0)

# calico-node env the operator renders itself (or only checks): same value as the release, or a value it accepts
RENDERED = {
    "DATASTORE_TYPE": "the operator supports the Kubernetes datastore only (checked before this)",
    "WAIT_FOR_DATASTORE": "rendered by the operator",
    "NODENAME": "rendered by the operator (spec.nodeName)",
    "CLUSTER_TYPE": "rendered by the operator (k8s,operator[,bgp])",
    "CALICO_DISABLE_FILE_LOGGING": "rendered by the operator",
    "FELIX_HEALTHENABLED": "rendered by the operator",
    "FELIX_DEFAULTENDPOINTTOHOSTACTION": "rendered by the operator (ACCEPT)",
    "CALICO_NETWORKING_BACKEND": "spec.calicoNetwork.bgp",
    "IP": "spec.calicoNetwork.nodeAddressAutodetectionV4 (IP=autodetect or none)",
    "IP6": "spec.calicoNetwork.nodeAddressAutodetectionV6 (IP6=autodetect or none)",
    "IP_AUTODETECTION_METHOD": "spec.calicoNetwork.nodeAddressAutodetectionV4",
    "IP6_AUTODETECTION_METHOD": "spec.calicoNetwork.nodeAddressAutodetectionV6",
    "FELIX_IPV6SUPPORT": "rendered by the operator from the IPv6 pool",
    "FELIX_IPINIPMTU": "spec.calicoNetwork.mtu",
    "FELIX_VXLANMTU": "spec.calicoNetwork.mtu",
    "FELIX_VXLANMTUV6": "spec.calicoNetwork.mtu",
    "FELIX_WIREGUARDMTU": "spec.calicoNetwork.mtu",
    "FELIX_WIREGUARDMTUV6": "spec.calicoNetwork.mtu",
    "FELIX_BPFENABLED": "spec.calicoNetwork.linuxDataplane (BPF)",
    "FELIX_NFTABLESMODE": "spec.calicoNetwork.linuxDataplane (Nftables)",
    "KUBERNETES_SERVICE_HOST": "ConfigMap kubernetes-services-endpoint of the operator's namespace",
    "KUBERNETES_SERVICE_PORT": "ConfigMap kubernetes-services-endpoint of the operator's namespace",
    "FELIX_PROMETHEUSMETRICSENABLED": "spec.nodeMetricsPort",
    "FELIX_PROMETHEUSMETRICSPORT": "spec.nodeMetricsPort",
    "FELIX_IPTABLESBACKEND": "FelixConfiguration default (moved there by the operator)",
}
for _v in ("4", "6"):
    for _k, _f in (("CIDR", "cidr"), ("BLOCK_SIZE", "blockSize"), ("IPIP", "encapsulation"),
                   ("VXLAN", "encapsulation"), ("NAT_OUTGOING", "natOutgoing"), ("NODE_SELECTOR", "nodeSelector"),
                   ("DISABLE_BGP_EXPORT", "disableBGPExport")):
        RENDERED["CALICO_IPV%sPOOL_%s" % (_v, _k)] = (
            "spec.calicoNetwork.ipPools[].%s (the IPv%s pool as the datastore has it)" % (_f, _v))
# calico-node env the operator's converter accepts but drops (it neither renders nor moves them: seen with v1.40.7,
# FELIX_LOGSEVERITYSCREEN=Debug was not in FelixConfiguration default after the migration) -> FelixConfiguration field
DROPPED = {
    "FELIX_LOGSEVERITYSCREEN": "logSeverityScreen",
    "FELIX_LOGSEVERITYSYS": "logSeveritySys",
    "FELIX_USAGEREPORTINGENABLED": "usageReportingEnabled",
}
CNI_RENDERED = ("CNI_CONF_NAME", "CNI_NETWORK_CONFIG", "KUBERNETES_NODE_NAME", "CNI_MTU", "SLEEP",
                "CALICO_NETWORKING_BACKEND")
# calico-node env the operator's converter refuses unless it has this value (case-insensitive)
REQUIRED_VALUES = {
    "FELIX_DEFAULTENDPOINTTOHOSTACTION": "accept",
    "DATASTORE_TYPE": "kubernetes",
}
KUBE_CONTROLLERS_RENDERED = ("DATASTORE_TYPE", "ENABLED_CONTROLLERS", "AUTO_HOST_ENDPOINTS")
ENABLED_CONTROLLERS_OK = ("node", "node,loadbalancer", "loadbalancer,node")
# annotations a manifest install carries that are not the user's
IGNORED_ANNOTATION_PREFIXES = ("kubectl.kubernetes.io/", "deprecated.daemonset.template.generation",
                               "deployment.kubernetes.io/", "meta.helm.sh/", "scheduler.alpha.kubernetes.io/")

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
# kinds of the manifest never removed as leftovers, whatever is left of them
NEVER_LEFTOVER = ("CustomResourceDefinition", "Namespace")

PHASES = ("manifest", "recorded", "operator", "installation", "migrated", "verified", "done", "operator-managed")


# -- small readers ------------------------------------------------------------------------------------------

def _annotations(obj):
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def _template_annotations(obj):
    return ((((obj or {}).get("spec") or {}).get("template") or {}).get("metadata") or {}).get("annotations") or {}


def _env_names(cont):
    return [e.get("name") for e in (cont or {}).get("env") or []]


def _env_entry(cont, name):
    return next((e for e in (cont or {}).get("env") or [] if e.get("name") == name), None)


# what the API server fills in when a manifest leaves it out: (key, value) pairs dropped before comparing
SERVER_DEFAULTS = (("apiVersion", "v1"), ("type", ""), ("defaultMode", 420))
DEFAULTED_SOURCES = ("fieldRef", "hostPath", "configMap", "secret", "projected", "downwardAPI")


def normalise(value, parent=None):
    """``value`` without the defaults the API server adds (a fieldRef's ``apiVersion: v1``, a hostPath's empty
    ``type``, a volume source's ``defaultMode: 420``), so an object read back compares equal to its manifest."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if (key, item) in SERVER_DEFAULTS and parent in DEFAULTED_SOURCES:
                continue
            out[key] = normalise(item, key)
        return out
    if isinstance(value, list):
        return [normalise(v, parent) for v in value]
    return value


def _same(a, b):
    return json.dumps(normalise(a), sort_keys=True) == json.dumps(normalise(b), sort_keys=True)


def _same_env(a, b):
    """Two env entries set the same thing (a literal, or the same source)."""
    return _same(a, b)


def _value(cont, name, configmaps):
    return env_value(cont, name, configmaps)[0]


def parse_version(text):
    """``(major, minor, patch)`` of ``vX.Y.Z`` (an image tag), or None."""
    t = (text or "").lstrip("v").split("-", 1)[0]
    parts = t.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def image_parts(image):
    """``(registry, path, name, tag)`` of an image reference: ``quay.io/calico/node:v3.31.4`` ->
    ``("quay.io/", "calico", "node", "v3.31.4")``; a digest is dropped; a registry is the first part when it has a
    dot or a colon, or is ``localhost``."""
    ref = (image or "").split("@", 1)[0]
    name_tag = ref.rsplit("/", 1)
    last = name_tag[-1]
    name, tag = (last.rsplit(":", 1) + [None])[:2] if ":" in last else (last, None)
    rest = name_tag[0] if len(name_tag) == 2 else ""
    parts = rest.split("/") if rest else []
    registry = ""
    if parts and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        registry = parts.pop(0) + "/"
    return registry, "/".join(parts), name, tag


def calico_node_version(daemonset):
    c = container(daemonset, NODE_CONTAINER)
    return image_parts((c or {}).get("image"))[3] if c else None


# -- what the install changed, and what it becomes ----------------------------------------------------------

def _item(where, name, value, release_value=None, maps_to=None, refused=None, fix=None):
    out = {"where": where, "name": name, "value": value, "release_value": release_value}
    if refused:
        out.update(refused=refused, fix=fix or "")
    else:
        out["maps_to"] = maps_to
    return out


def _describe_env(entry):
    if entry is None:
        return None
    if "value" in entry:
        return entry.get("value")
    return json.dumps(entry.get("valueFrom"), sort_keys=True)


def _rendered_or_refused(where, name, value, rel_entry, rendered, workload, accept_hint=True):
    """An env var the user changed: what the operator renders in its place (``rendered``: a description), or refused -
    no Installation field carries it."""
    if rendered:
        return _item(where, name, value, _describe_env(rel_entry), maps_to=rendered)
    hint = " (or accept losing it: operator_migration_accept)" if accept_hint else ""
    return _item(where, name, value, _describe_env(rel_entry),
                 refused="an Installation has no field for %s %s" % (where, name),
                 fix="remove %s from %s%s" % (name, workload, hint))


def _node_env(running, release, configmaps):
    out = []
    cont, rel = container(running, NODE_CONTAINER), container(release, NODE_CONTAINER)
    for name in _env_names(cont):
        entry, rel_entry = _env_entry(cont, name), _env_entry(rel, name)
        value = _value(cont, name, configmaps)
        where = "calico-node env"
        required = REQUIRED_VALUES.get(name)
        if required and (value or "").lower() != required:
            out.append(_item(where, name, value, _describe_env(rel_entry), refused="the operator needs %s=%s"
                             % (name, required), fix="set %s to %s in the DaemonSet, or remove it" % (name, required)))
            continue
        if name == "NODENAME" and "value" in entry:
            out.append(_item(where, name, value, refused="NODENAME must be unset or the field spec.nodeName",
                             fix="remove NODENAME or set it from the field spec.nodeName"))
            continue
        if name == "IP" and (value or "autodetect") not in ("autodetect", "none"):
            out.append(_item(where, name, value, refused="the operator supports IP=autodetect or IP=none",
                             fix="remove IP or set it to autodetect"))
            continue
        if name == "IP6" and (value or "none") not in ("autodetect", "none"):
            out.append(_item(where, name, value, refused="the operator supports IP6=autodetect or IP6=none",
                             fix="remove IP6 or set it to autodetect"))
            continue
        if rel_entry is not None and _same_env(entry, rel_entry):
            continue  # as the release sets it: rendered by the operator the same way
        if name in DROPPED:
            out.append(_item(where, name, value, _describe_env(rel_entry),
                             refused="the operator drops calico-node env %s (it does not move it to "
                             "FelixConfiguration)" % name,
                             fix="set spec.%s of FelixConfiguration default to %s and remove %s from the DaemonSet (or "
                             "accept losing it: operator_migration_accept)" % (DROPPED[name], value, name)))
        else:
            felix = name[len("FELIX_"):] if name.startswith("FELIX_") else None
            moved = felix and "FelixConfiguration default (the operator moves FELIX_%s there: %s)" % (
                felix, felix.lower())
            out.append(_rendered_or_refused(where, name, value, rel_entry, RENDERED.get(name) or moved,
                                            "the calico-node DaemonSet"))
    for name in _env_names(rel):
        if _env_entry(cont, name) is None and name not in RENDERED and name not in DROPPED \
                and not name.startswith("FELIX_"):
            out.append(_item("calico-node env", name, None, _describe_env(_env_entry(rel, name)),
                             maps_to="rendered by the operator (the manifest removed it; the operator sets its own)"))
    return out


def _cni_env(running, release, configmaps):
    out = []
    cont, rel = _init_container(running, CNI_CONTAINER), _init_container(release, CNI_CONTAINER)
    for name in _env_names(cont):
        entry, rel_entry = _env_entry(cont, name), _env_entry(rel, name)
        if rel_entry is not None and _same_env(entry, rel_entry):
            continue
        value = _value(cont, name, configmaps)
        if name == "KUBERNETES_NODE_NAME" and "value" in entry:
            out.append(_item("install-cni env", name, value, refused="KUBERNETES_NODE_NAME must be unset or the "
                             "field spec.nodeName", fix="remove it or set it from the field spec.nodeName"))
        else:
            out.append(_rendered_or_refused("install-cni env", name, value, rel_entry, name in CNI_RENDERED and (
                "spec.cni / spec.calicoNetwork (rendered by the operator)"), "the install-cni init container",
                accept_hint=False))
    return out


def _init_container(workload, name):
    return next((c for c in pod_spec(workload).get("initContainers") or [] if c.get("name") == name), None)


def _images(running, release):
    """The registry and image path the running images use, where they differ from the release's."""
    out = []
    for c in (pod_spec(running).get("initContainers") or []) + (pod_spec(running).get("containers") or []):
        rel = next((r for r in (pod_spec(release).get("initContainers") or [])
                    + (pod_spec(release).get("containers") or []) if r.get("name") == c.get("name")), None)
        if rel is None:
            continue
        reg, path, name, _tag = image_parts(c.get("image"))
        rreg, rpath, rname, _rtag = image_parts(rel.get("image"))
        if name != rname:
            out.append(_item("calico-node image", c.get("name"), c.get("image"), rel.get("image"),
                             refused="the image name differs from the release's (%s)" % rname,
                             fix="use the release's image name, mirrored under a registry of your own"))
        elif (reg, path) != (rreg, rpath):
            out.append(_item("calico-node image", c.get("name"), c.get("image"), rel.get("image"),
                             maps_to="spec.registry %s and spec.imagePath %s" % (reg or "(default)", path)))
    return out


def _pod_level(running, release, what):
    """Init containers, volumes, args, node selector, affinity, tolerations, annotations of a workload."""
    out = []
    spec, rspec = pod_spec(running), pod_spec(release)
    rel_inits = set(c.get("name") for c in rspec.get("initContainers") or [])
    for c in spec.get("initContainers") or []:
        if c.get("name") not in rel_inits and c.get("name") != "flexvol-driver":
            out.append(_item(what + " init container", c.get("name"), c.get("image"), refused="an init container "
                             "the release does not have", fix="remove it from the %s workload" % what))
    rel_vols = dict((v.get("name"), v) for v in rspec.get("volumes") or [])
    for v in spec.get("volumes") or []:
        name = v.get("name")
        if name == "flexvol-driver-host":
            path = (v.get("hostPath") or {}).get("path")
            if path:
                out.append(_item(what + " volume", name, path, maps_to="spec.flexVolumePath %s" % path))
            else:
                out.append(_item(what + " volume", name, None, refused="volume flexvol-driver-host must be a "
                                 "hostPath", fix="make it a hostPath or remove it"))
        elif name not in rel_vols:
            out.append(_item(what + " volume", name, json.dumps(v, sort_keys=True), refused="a volume the release "
                             "does not have", fix="remove it from the %s workload" % what))
        elif not _same(v, rel_vols[name]):
            out.append(_item(what + " volume", name, json.dumps(v, sort_keys=True),
                             json.dumps(rel_vols[name], sort_keys=True), refused="a volume changed from the release's",
                             fix="restore the release's volume %s" % name))
    for c in spec.get("containers") or []:
        rc = next((r for r in rspec.get("containers") or [] if r.get("name") == c.get("name")), None)
        if rc is None:
            out.append(_item(what + " container", c.get("name"), c.get("image"), refused="a container the release "
                             "does not have", fix="remove it from the %s workload" % what))
            continue
        for key in ("args", "command"):
            if (c.get(key) or None) != (rc.get(key) or None):
                out.append(_item("%s %s" % (what, key), c.get("name"), json.dumps(c.get(key)),
                                 json.dumps(rc.get(key)), refused="%s changed from the release's" % key,
                                 fix="restore the release's %s" % key))
        if not _same(c.get("resources") or {}, rc.get("resources") or {}):
            out.append(_item(what + " resources", c.get("name"), json.dumps(c.get("resources"), sort_keys=True),
                             json.dumps(rc.get("resources"), sort_keys=True),
                             maps_to="spec.%s.spec.template.spec.containers[%s].resources" % (
                                 "calicoNodeDaemonSet" if what == "calico-node" else "calicoKubeControllersDeployment",
                                 c.get("name"))))
    sel = dict((k, v) for k, v in (spec.get("nodeSelector") or {}).items() if k not in OS_SELECTORS
               and k != MIGRATION_LABEL)
    if sel:
        if what == "calico-node":
            out.append(_item(what + " nodeSelector", ",".join(sorted(sel)), json.dumps(sel, sort_keys=True),
                             refused="the operator runs calico-node on every node (no node selector)",
                             fix="remove the nodeSelector (or accept losing it: operator_migration_accept)"))
        else:
            out.append(_item(what + " nodeSelector", ",".join(sorted(sel)), json.dumps(sel, sort_keys=True),
                             maps_to="spec.controlPlaneNodeSelector"))
    if not _same(spec.get("affinity"), rspec.get("affinity")):
        out.append(_item(what + " affinity", "affinity", json.dumps(spec.get("affinity"), sort_keys=True),
                         json.dumps(rspec.get("affinity"), sort_keys=True),
                         refused="node affinity is not supported for %s by the operator's migration" % what,
                         fix="remove the affinity"))
    if not _same(spec.get("tolerations"), rspec.get("tolerations")):
        out.append(_item(what + " tolerations", "tolerations", json.dumps(spec.get("tolerations"), sort_keys=True),
                         json.dumps(rspec.get("tolerations"), sort_keys=True),
                         refused="tolerations changed from the release's (the operator renders its own)",
                         fix="restore the release's tolerations (or accept losing them: operator_migration_accept)"))
    for source, annotations in (("", _annotations(running)), (" pod template", _template_annotations(running))):
        for key in sorted(annotations):
            if key.startswith(IGNORED_ANNOTATION_PREFIXES):
                continue
            rel = (_annotations(release) if not source else _template_annotations(release)).get(key)
            if rel == annotations[key]:
                continue
            out.append(_item(what + source + " annotation", key, annotations[key], rel,
                             refused="an annotation the operator's migration does not accept",
                             fix="remove the annotation %s" % key))
    return out


def _kube_controllers(running, release, configmaps):
    out = []
    cont, rel = container(running, "calico-kube-controllers"), container(release, "calico-kube-controllers")
    for name in _env_names(cont):
        entry, rel_entry = _env_entry(cont, name), _env_entry(rel, name)
        value = _value(cont, name, configmaps)
        if name == "ENABLED_CONTROLLERS" and (value or "").replace(" ", "") not in ENABLED_CONTROLLERS_OK:
            out.append(_item("calico-kube-controllers env", name, value, _describe_env(rel_entry),
                             refused="the operator runs ENABLED_CONTROLLERS node or node,loadbalancer",
                             fix="set ENABLED_CONTROLLERS to node,loadbalancer or remove it"))
            continue
        if rel_entry is not None and _same_env(entry, rel_entry):
            continue
        out.append(_rendered_or_refused("calico-kube-controllers env", name, value, rel_entry,
                                        name in KUBE_CONTROLLERS_RENDERED and "rendered by the operator",
                                        "calico-kube-controllers"))
    return out


def cni_json(configmap):
    """The CNI configuration of ConfigMap calico-config, parsed: install-cni fills its ``__NAME__`` placeholders
    (``"mtu": __CNI_MTU__`` is bare), so a bare placeholder is read as 0 first. ValueError when it is not JSON."""
    text = ((configmap or {}).get("data") or {}).get("cni_network_config") or "{}"
    return json.loads(re.sub(r'(?<!")__[A-Z0-9_]+__(?!")', "0", text))


def _cni_config(configmap, release_configmap):
    """The CNI configuration of ConfigMap calico-config: plugins other than the release's are refused; host-local
    IPAM maps to spec.cni.ipam.type HostLocal."""
    out = []
    try:
        conf, rconf = cni_json(configmap), cni_json(release_configmap)
    except ValueError:
        return [_item("calico-config cni_network_config", "cni_network_config", None,
                      refused="not valid JSON", fix="restore the release's cni_network_config")]
    types = [p.get("type") for p in conf.get("plugins") or []]
    rtypes = [p.get("type") for p in rconf.get("plugins") or []]
    for t in types:
        if t not in rtypes and t not in ("bandwidth", "tuning"):
            out.append(_item("calico-config cni_network_config", "plugin " + str(t), t,
                             refused="a CNI plugin the operator does not render",
                             fix="remove the plugin %s from cni_network_config" % t))
    calico = next((p for p in conf.get("plugins") or [] if p.get("type") == "calico"), None)
    if calico is None:
        out.append(_item("calico-config cni_network_config", "plugin calico", None,
                         refused="no calico CNI plugin (this playbook moves Calico CNI installs only)",
                         fix="use the operator's own install for a non-Calico CNI"))
    else:
        ipam = (calico.get("ipam") or {}).get("type")
        if ipam == "host-local":
            out.append(_item("calico-config cni_network_config", "ipam", ipam, "calico-ipam",
                             maps_to="spec.cni.ipam.type HostLocal"))
        elif ipam not in (None, "calico-ipam"):
            out.append(_item("calico-config cni_network_config", "ipam", ipam, "calico-ipam",
                             refused="IPAM %s is not one the operator renders" % ipam,
                             fix="use calico-ipam or host-local"))
    return out


def customisations(observed, release):
    """Everything the running install changed against the release's manifest, each mapped or refused.

    ``observed``: ``node_ds``, ``kube_controllers``, ``config_map`` (the running objects, None when absent);
    ``release``: the same three from the release's manifest."""
    cms = {"calico-config": observed.get("config_map")} if observed.get("config_map") else {}
    out = []
    out += _node_env(observed.get("node_ds"), release.get("node_ds"), cms)
    out += _cni_env(observed.get("node_ds"), release.get("node_ds"), cms)
    out += _images(observed.get("node_ds"), release.get("node_ds"))
    out += _pod_level(observed.get("node_ds"), release.get("node_ds"), "calico-node")
    if observed.get("kube_controllers") is not None:
        out += _kube_controllers(observed.get("kube_controllers"), release.get("kube_controllers"), cms)
        out += _pod_level(observed.get("kube_controllers"), release.get("kube_controllers"),
                          "calico-kube-controllers")
    out += _cni_config(observed.get("config_map"), release.get("config_map"))
    mtu = ((observed.get("config_map") or {}).get("data") or {}).get("veth_mtu")
    rmtu = ((release.get("config_map") or {}).get("data") or {}).get("veth_mtu")
    if mtu != rmtu:
        out.append(_item("calico-config", "veth_mtu", mtu, rmtu, maps_to="spec.calicoNetwork.mtu"))
    backend = ((observed.get("config_map") or {}).get("data") or {}).get("calico_backend")
    rbackend = ((release.get("config_map") or {}).get("data") or {}).get("calico_backend")
    if backend != rbackend:
        if backend in ("bird", "vxlan", "none"):
            out.append(_item("calico-config", "calico_backend", backend, rbackend, maps_to="spec.calicoNetwork.bgp"))
        else:
            out.append(_item("calico-config", "calico_backend", backend, rbackend,
                             refused="calico_backend %s is not bird, vxlan or none" % backend,
                             fix="set calico_backend to bird or vxlan"))
    return out


def refused(items, accept=()):
    """The refused customisations not accepted by name (``accept``: names the user agrees to lose)."""
    return [i for i in items if i.get("refused") and i["name"] not in (accept or ())]


def item_line(item):
    if item.get("refused"):
        return "%s %s=%s: refused, %s; fix: %s" % (item["where"], item["name"], item.get("value"),
                                                   item["refused"], item.get("fix"))
    return "%s %s=%s (release: %s) -> %s" % (item["where"], item["name"], item.get("value"),
                                             item.get("release_value"), item.get("maps_to"))


# -- the Installation the install amounts to ----------------------------------------------------------------

def _encapsulation(pool_spec):
    ipip = pool_spec.get("ipipMode") or "Never"
    vxlan = pool_spec.get("vxlanMode") or "Never"
    table = {("Never", "Never"): "None", ("Never", "Always"): "VXLAN", ("Never", "CrossSubnet"): "VXLANCrossSubnet",
             ("Always", "Never"): "IPIP", ("CrossSubnet", "Never"): "IPIPCrossSubnet"}
    return table.get((ipip, vxlan))


def _is_v6(cidr):
    return ":" in (cidr or "")


def select_pool(pools, v6=False):
    """The pool the operator's converter takes for one IP family: an enabled ``default-ipv*`` pool first, else the
    first enabled pool of that family (in the datastore's order)."""
    family = [p for p in pools or [] if not (p.get("spec") or {}).get("disabled")
              and _is_v6((p.get("spec") or {}).get("cidr")) == v6]
    named = [p for p in family if ((p.get("metadata") or {}).get("name") or "").startswith("default-ipv")]
    return (named or family or [None])[0]


def convert_pool(pool):
    spec = pool.get("spec") or {}
    enc = _encapsulation(spec)
    if enc is None:
        raise ValueError("IPPool %s mixes IPIP (%s) and VXLAN (%s), which an Installation cannot express" % (
            pool["metadata"]["name"], spec.get("ipipMode"), spec.get("vxlanMode")))
    out = {"name": pool["metadata"]["name"], "cidr": spec.get("cidr"), "encapsulation": enc,
           "natOutgoing": "Enabled" if spec.get("natOutgoing") else "Disabled",
           "nodeSelector": spec.get("nodeSelector") or "all()",
           "disableBGPExport": bool(spec.get("disableBGPExport"))}
    if spec.get("blockSize"):
        out["blockSize"] = spec["blockSize"]
    return out


def _autodetection(method):
    method = method or ""
    if method in ("", "first-found"):
        return {"firstFound": True}
    for prefix, key in (("interface=", "interface"), ("can-reach=", "canReach"), ("skip-interface=", "skipInterface")):
        if method.startswith(prefix):
            return {key: method[len(prefix):]}
    if method.startswith("cidr="):
        return {"cidrs": method[len("cidr="):].split(",")}
    if method == "kubernetes-internal-ip":
        return {"kubernetes": "NodeInternalIP"}
    raise ValueError("IP autodetection method %s is not one an Installation can express" % method)


def derive_installation(observed, release):
    """The Installation ``spec`` of the running install (what the operator's converter derives)."""
    ds = observed.get("node_ds")
    cms = {"calico-config": observed.get("config_map")} if observed.get("config_map") else {}
    node = container(ds, NODE_CONTAINER)
    net = {}
    chosen = (select_pool(observed.get("ippools")), select_pool(observed.get("ippools"), v6=True))
    pools = [convert_pool(p) for p in chosen if p]
    if pools:
        net["ipPools"] = pools
    data = (observed.get("config_map") or {}).get("data") or {}
    mtu = data.get("veth_mtu")
    if mtu and str(mtu).isdigit() and int(mtu) > 0:
        net["mtu"] = int(mtu)
    backend = _value(node, "CALICO_NETWORKING_BACKEND", cms) or data.get("calico_backend") or "bird"
    net["bgp"] = "Enabled" if backend == "bird" else "Disabled"
    ip = _value(node, "IP", cms) or "autodetect"
    if ip == "autodetect":
        net["nodeAddressAutodetectionV4"] = _autodetection(_value(node, "IP_AUTODETECTION_METHOD", cms))
    ip6 = _value(node, "IP6", cms) or "none"
    if ip6 == "autodetect":
        net["nodeAddressAutodetectionV6"] = _autodetection(_value(node, "IP6_AUTODETECTION_METHOD", cms))
    if (_value(node, "FELIX_BPFENABLED", cms) or "").lower() == "true":
        net["linuxDataplane"] = "BPF"
    elif (_value(node, "FELIX_NFTABLESMODE", cms) or "").lower() == "enabled":
        net["linuxDataplane"] = "Nftables"
    else:
        net["linuxDataplane"] = "Iptables"
    spec = {"calicoNetwork": net, "cni": {"type": "Calico", "ipam": {"type": "Calico"}}}
    try:
        conf = cni_json(observed.get("config_map"))
    except ValueError:
        conf = {}
    calico = next((p for p in conf.get("plugins") or [] if p.get("type") == "calico"), {})
    if (calico.get("ipam") or {}).get("type") == "host-local":
        spec["cni"]["ipam"]["type"] = "HostLocal"
    reg, path, _name, _tag = image_parts((node or {}).get("image"))
    rreg, rpath, _rname, _rtag = image_parts((container(release.get("node_ds"), NODE_CONTAINER) or {}).get("image"))
    if (reg, path) != (rreg, rpath):
        if reg:
            spec["registry"] = reg
        spec["imagePath"] = path
    flex = next((v for v in pod_spec(ds).get("volumes") or [] if v.get("name") == "flexvol-driver-host"), None)
    spec["flexVolumePath"] = ((flex or {}).get("hostPath") or {}).get("path") or "None"
    kc = observed.get("kube_controllers")
    if kc is not None:
        sel = dict((k, v) for k, v in (pod_spec(kc).get("nodeSelector") or {}).items() if k not in OS_SELECTORS)
        if sel:
            spec["controlPlaneNodeSelector"] = sel
    port = _value(node, "FELIX_PROMETHEUSMETRICSPORT", cms)
    if (_value(node, "FELIX_PROMETHEUSMETRICSENABLED", cms) or "").lower() == "true":
        spec["nodeMetricsPort"] = int(port) if (port or "").isdigit() else 9091
    return spec


def services_endpoint(observed):
    """``{"host", "port"}`` calico-node reaches the API server at (its KUBERNETES_SERVICE_HOST/PORT, set for the
    eBPF data plane), which the operator reads from ConfigMap kubernetes-services-endpoint; None when unset."""
    node = container(observed.get("node_ds"), NODE_CONTAINER)
    cms = {"calico-config": observed.get("config_map")} if observed.get("config_map") else {}
    host, port = _value(node, "KUBERNETES_SERVICE_HOST", cms), _value(node, "KUBERNETES_SERVICE_PORT", cms)
    return {"host": host, "port": port or "443"} if host else None


def installation_differences(want, computed, path="spec"):
    """Where the operator's computed Installation differs from what was derived (only the derived fields count;
    the operator adds its defaults)."""
    out = []
    if isinstance(want, dict):
        for key in sorted(want):
            out += installation_differences(want[key], (computed or {}).get(key) if isinstance(computed, dict)
                                            else None, "%s.%s" % (path, key))
    elif isinstance(want, list):
        if not isinstance(computed, list) or len(computed) < len(want):
            out.append("%s: derived %s, the operator has %s" % (path, json.dumps(want), json.dumps(computed)))
        else:
            for i, w in enumerate(want):
                out += installation_differences(w, computed[i], "%s[%d]" % (path, i))
    elif want != computed:
        out.append("%s: derived %s, the operator has %s" % (path, json.dumps(want), json.dumps(computed)))
    return out


# -- policies, before and after -------------------------------------------------------------------------------

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


# -- what the operator leaves ----------------------------------------------------------------------------------

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


# -- the phase and the next step -------------------------------------------------------------------------------

def nodes_migrated(nodes, operator_ds):
    """How many nodes run the operator's calico-node (ready pods of calico-system's DaemonSet) out of all."""
    status = (operator_ds or {}).get("status") or {}
    return {"total": len(nodes or []), "ready": int(status.get("numberReady") or 0),
            "desired": int(status.get("desiredNumberScheduled") or 0),
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
