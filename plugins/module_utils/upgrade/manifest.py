# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade job's manifest: the release manifest of the target version with the user's patches applied and
the live etcd settings carried over (endpoints, TLS Secret; never written in clear to the artifact). Calico's
documentation: "Upgrade Calico on Kubernetes", section "Upgrading an installation that uses manifests".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

try:
    import yaml
except ImportError:  # pragma: no cover - modules report it with missing_required_lib
    pass

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.manifest import (
    ManifestError, document_segments, parse_segment)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.upgrade.patches import (
    PatchError, check_patches, describe_selector, json_patch, selector_matches, strategic_merge)


ETCD_SECRET = "calico-etcd-secrets"
ETCD_TLS_KEYS = (("etcd_key", "etcd-key"), ("etcd_cert", "etcd-cert"), ("etcd_ca", "etcd-ca"))
REDACTED = "<redacted: the real value is applied, not written here>"


def set_etcd(doc, endpoints=None, tls=None, paths=None):
    """A copy of a ConfigMap or Secret document of an etcd manifest with ``etcd_endpoints`` (a list of URLs)
    and the TLS material (``tls``: ``{etcd_key, etcd_cert, etcd_ca}`` PEM texts) set: the Secret
    ``calico-etcd-secrets`` gets them base64-encoded, the ConfigMap the paths where calico-node mounts them.
    ``paths``: live ConfigMap TLS paths kept where the user gave no material (``carry_etcd``)."""
    import base64
    out = copy.deepcopy(doc)
    tls = dict((k, v) for k, v in (tls or {}).items() if v)
    if out.get("kind") == "ConfigMap" and "etcd_endpoints" in (out.get("data") or {}):
        if endpoints:
            out["data"]["etcd_endpoints"] = ",".join(endpoints)
        for key, file_name in ETCD_TLS_KEYS:
            if key in tls:
                out["data"][key] = "/calico-secrets/%s" % file_name
            elif (paths or {}).get(key):
                out["data"][key] = paths[key]
    elif out.get("kind") == "Secret" and (out.get("metadata") or {}).get("name") == ETCD_SECRET and tls:
        data = out.get("data") or {}
        for key, file_name in ETCD_TLS_KEYS:
            if key in tls:
                text = tls[key] if isinstance(tls[key], bytes) else tls[key].encode("utf-8")
                data[file_name] = base64.b64encode(text).decode("ascii")
        out["data"] = data
    return out


# The release manifests ship a placeholder in etcd_endpoints ("Configure this with the location of your etcd
# cluster"); it is never an endpoint to keep.
_ETCD_PLACEHOLDER = re.compile(r"<ETCD_[A-Z]+>|__ETCD_[A-Z]+__")
USER_VARIABLES = {"etcd_endpoints": "upgrade_etcd_endpoints", "etcd_key": "upgrade_etcd_key",
                  "etcd_cert": "upgrade_etcd_cert", "etcd_ca": "upgrade_etcd_ca"}


def carry_etcd(endpoints, tls, live):
    """The etcd settings of the new manifest: the user's where given, else the live ones, carried over.

    Calico's guide "Upgrade Calico on Kubernetes" (section "Upgrading an installation that uses manifests and the
    etcd datastore") has the new release's manifest carry the same changes as the original one: as downloaded,
    its ConfigMap has a placeholder endpoint and empty TLS paths and its Secret no keys, so applying it as it is
    would leave calico-node without its datastore.

    ``live``: the ``etcd`` fact of ``calico_facts`` (``configmap``: namespace, name, data; ``secret``: exists and
    key names, never values), or None. Returns a dict: ``endpoints`` to write; ``paths``, the live TLS paths
    kept (each only when its material is in the live Secret); ``keep_secret``, True when the live Secret is
    left as it is (the user gave no TLS material: the new manifest's empty Secret is not applied over it);
    ``notes`` (what was carried, names only); ``problems`` (what cannot be carried, each naming the variable
    to set). A path whose file is not in the Secret (only on the nodes' disks) cannot be carried.
    """
    live = live or {}
    cm = live.get("configmap") or {}
    data = cm.get("data") or {}
    secret = live.get("secret") or {}
    secret_keys = secret.get("keys")
    cm_name = "ConfigMap %s/%s" % (cm.get("namespace"), cm.get("name")) if cm else "the etcd ConfigMap"
    secret_name = "Secret %s/%s" % (secret.get("namespace") or cm.get("namespace"), ETCD_SECRET)
    tls = dict((k, v) for k, v in (tls or {}).items() if v)
    out = {"endpoints": [e for e in (endpoints or []) if e], "paths": {}, "keep_secret": False, "notes": [],
           "problems": []}
    if not out["endpoints"]:
        current = str(data.get("etcd_endpoints") or "").strip()
        if current and not _ETCD_PLACEHOLDER.search(current):
            out["endpoints"] = [e.strip() for e in current.split(",") if e.strip()]
            out["notes"].append("etcd_endpoints kept from %s" % cm_name)
        else:
            out["problems"].append(
                "upgrade_etcd_endpoints is required for the etcd datastore: %s has %s to keep" % (
                    cm_name, "no etcd_endpoints" if not current else "only the placeholder %r" % current))
    for key, file_name in ETCD_TLS_KEYS:
        path = str(data.get(key) or "")
        if key in tls or not path:
            continue
        if secret_keys is not None and file_name not in secret_keys:
            out["problems"].append(
                "%s sets %s to %s but %s has no %s, so the material cannot be carried into the new manifest "
                "(is it only on the nodes' disks?): give %s (PEM text)"
                % (cm_name, key, path, secret_name, file_name, USER_VARIABLES[key]))
            continue
        out["paths"][key] = path
        out["notes"].append("%s (%s) kept from %s" % (key, path, cm_name))
    _carry_secret(out, tls, secret, secret_keys, secret_name, cm)
    return out


def _carry_secret(out, tls, secret, secret_keys, secret_name, cm):
    """No TLS material given: the live Secret is kept as it is. Some given: a problem for each live key the new
    Secret would lose."""
    if not tls:
        out["keep_secret"] = bool(secret.get("exists")) or (secret.get("exists") is None and bool(cm))
        if out["keep_secret"]:
            keys = (" (keys %s)" % ", ".join(secret_keys)) if secret_keys else ""
            out["notes"].append("%s kept as it is%s" % (secret_name, keys))
    elif secret_keys:
        given = set(f for k, f in ETCD_TLS_KEYS if k in tls)
        dropped = [k for k in secret_keys if k not in given]
        if dropped:
            out["problems"].append(
                "%s has %s, which the new manifest would not carry when only %s %s given: give %s too, or none of "
                "upgrade_etcd_key/cert/ca to keep the Secret as it is" % (
                    secret_name, ", ".join(dropped), ", ".join(sorted(USER_VARIABLES[k] for k in tls)),
                    "is" if len(tls) == 1 else "are",
                    ", ".join(USER_VARIABLES.get(k.replace("-", "_"), "the key " + k) for k in dropped)))


def etcd_overwrites(documents, live):
    """Messages for every non-empty live etcd setting the documents would empty (the last guard: never write an
    empty TLS setting, or endpoint, over a non-empty one; never drop a key of the live Secret)."""
    out = []
    live = live or {}
    data_live = ((live.get("configmap") or {}).get("data")) or {}
    secret_keys = (live.get("secret") or {}).get("keys") or []
    for doc in documents or []:
        if not isinstance(doc, dict):
            continue
        meta = doc.get("metadata") or {}
        data = doc.get("data") or {}
        if doc.get("kind") == "ConfigMap" and "etcd_endpoints" in data:
            for key in ("etcd_endpoints",) + tuple(k for k, _f in ETCD_TLS_KEYS):
                if data_live.get(key) and not data.get(key):
                    out.append("ConfigMap %s: %s would be emptied (it is %s now): give %s"
                               % (meta.get("name"), key, data_live[key], USER_VARIABLES[key]))
        elif doc.get("kind") == "Secret" and meta.get("name") == ETCD_SECRET:
            for name in secret_keys:
                if not data.get(name):
                    out.append("Secret %s: key %s would be removed" % (ETCD_SECRET, name))
    return out


def _reserialize(old, doc):
    lead = old[:len(old) - len(old.lstrip("\n"))]
    comments = "".join(line + "\n" for line in old.strip("\n").splitlines() if line.startswith("#"))
    trail = "\n" if old.endswith("\n\n") else ""
    return lead + comments + yaml.safe_dump(doc, default_flow_style=False, sort_keys=False) + trail


def render_upgrade(text, patches=(), etcd_endpoints=None, etcd_tls=None, etcd_live=None, etcd_notes=None):
    """Prepare a downloaded release manifest for the upgrade.

    With ``etcd_endpoints`` (etcd flavors) the ConfigMap's ``etcd_endpoints`` is set, and with ``etcd_tls`` the
    TLS material goes into the Secret and its paths into the ConfigMap. With ``etcd_live`` (the live settings,
    see ``carry_etcd``) what the user did not give is carried over from the cluster, the live Secret is left out
    of the documents when no TLS material is given (it stays as it is), and a setting that cannot be carried, or
    that would be emptied, raises ManifestError naming it. Then each user patch (``kind``,
    ``name``, optional ``namespace``/``apiVersion``, and ``patch`` or ``json_patch``) is applied to every
    document it selects; a patch that selects nothing raises PatchError.

    Returns ``(artifact_text, documents, report)``: the text to keep for review (edited documents
    re-serialised, Secret data redacted, every other document byte for byte), the documents to apply, and
    one report entry per patch (``matched`` documents). What was carried from the live etcd settings is
    appended to the list ``etcd_notes``.
    """
    problems = check_patches(patches)
    if problems:
        raise PatchError("; ".join(problems))
    segments, separators = document_segments(text)
    parsed = [parse_segment(seg) for seg in segments]
    tls = dict((k, v) for k, v in (etcd_tls or {}).items() if v)
    carried = {"paths": {}, "keep_secret": False, "notes": []}
    if etcd_live is not None:
        carried = carry_etcd(etcd_endpoints, tls, etcd_live)
        if carried["problems"]:
            raise ManifestError("the etcd datastore settings cannot be carried into the new manifest (nothing was "
                                "written): %s" % "; ".join(carried["problems"]))
        etcd_endpoints = carried["endpoints"]
    edited = _with_etcd_settings(parsed, etcd_endpoints, tls, carried["paths"])
    report = _apply_patches(edited, patches, carried)
    if not carried["keep_secret"]:
        carried["notes"] = [n for n in carried["notes"] if "kept as it is" not in n]
    if etcd_live is not None:
        problems = etcd_overwrites([d for d in edited if not (carried["keep_secret"] and _is_etcd_secret(d))],
                                   etcd_live)
        if problems:
            raise ManifestError("the new manifest would empty live etcd datastore settings (nothing was written): "
                                "%s" % "; ".join(problems))
    artifact = _artifact(segments, separators, parsed, edited, carried["keep_secret"])
    documents = [d for d in edited if d is not None]
    if etcd_notes is not None:
        etcd_notes.extend(carried["notes"])
    return artifact, documents, report


def _with_etcd_settings(parsed, endpoints, tls, paths):
    """The documents with the etcd endpoints, TLS material and paths set (etcd flavors), or as they are."""
    if not (endpoints or tls or paths):
        return list(parsed)
    targets = [i for i, d in enumerate(parsed) if isinstance(d, dict) and d.get("kind") == "ConfigMap"
               and "etcd_endpoints" in (d.get("data") or {})]
    if not targets:
        raise ManifestError("the manifest has no ConfigMap with etcd_endpoints: it is not an etcd flavor")
    if tls and not any(isinstance(d, dict) and d.get("kind") == "Secret"
                       and (d.get("metadata") or {}).get("name") == ETCD_SECRET for d in parsed):
        raise ManifestError("the manifest has no Secret %s for the etcd TLS material" % ETCD_SECRET)
    if bool(tls.get("etcd_key")) != bool(tls.get("etcd_cert")):
        raise ManifestError("etcd TLS: the client key and certificate go together (give both or neither)")
    return [set_etcd(d, endpoints, tls, paths) if isinstance(d, dict) else d for d in parsed]


def _apply_patches(edited, patches, carried):
    """Each user patch applied in place to every document it selects; one report entry per patch. A patch of the
    etcd Secret makes it applied (``carried["keep_secret"]`` off)."""
    report = []
    for index, entry in enumerate(patches or []):
        hits = [i for i, d in enumerate(edited) if isinstance(d, dict) and selector_matches(d, entry)]
        if not hits:
            raise PatchError("upgrade_manifest_patches[%d] (%s) matches no document of the manifest"
                             % (index, describe_selector(entry)))
        if any(_is_etcd_secret(edited[i]) for i in hits):
            carried["keep_secret"] = False  # the user changes the Secret: it is applied (and guarded below)
        for i in hits:
            try:
                if "patch" in entry:
                    edited[i] = strategic_merge(edited[i], entry["patch"])
                else:
                    edited[i] = json_patch(edited[i], entry["json_patch"])
            except PatchError as exc:
                raise PatchError("upgrade_manifest_patches[%d] (%s): %s" % (index, describe_selector(entry), exc))
        report.append({"index": index, "target": describe_selector(entry), "type": "strategic" if "patch" in entry
                       else "json", "matched": len(hits)})
    return report


def _artifact(segments, separators, parsed, edited, keep_secret):
    """The text kept for review: edited documents re-serialised (Secret data redacted), every other document byte
    for byte; a live etcd Secret that is kept is left out of ``edited`` (set to None) and noted in the text."""
    out_segments = list(segments)
    for i, (old, new) in enumerate(zip(parsed, edited)):
        if keep_secret and _is_etcd_secret(new):
            # the live Secret stays as it is: the release's empty one is not applied over it
            edited[i] = None
            out_segments[i] = ("\n# Secret %s: left out of the upgrade; the live Secret is kept as it is (no "
                               "upgrade_etcd_key/cert/ca given)\n" % ETCD_SECRET)
            continue
        if new == old:
            continue
        shown = new
        if isinstance(new, dict) and new.get("kind") == "Secret" and new.get("data"):
            shown = copy.deepcopy(new)
            shown["data"] = dict((k, REDACTED) for k in new["data"])
        out_segments[i] = _reserialize(segments[i], shown)
    return out_segments[0] + "".join(sep + seg for sep, seg in zip(separators, out_segments[1:]))


def etcd_endpoints(documents):
    """The etcd endpoints an etcd manifest's ConfigMap holds (empty for the other flavors)."""
    for doc in documents or []:
        data = (doc.get("data") or {}) if isinstance(doc, dict) and doc.get("kind") == "ConfigMap" else {}
        if data.get("etcd_endpoints") and not _ETCD_PLACEHOLDER.search(str(data["etcd_endpoints"])):
            return [e.strip() for e in str(data["etcd_endpoints"]).split(",") if e.strip()]
    return []


def _is_etcd_secret(doc):
    return (isinstance(doc, dict) and doc.get("kind") == "Secret"
            and (doc.get("metadata") or {}).get("name") == ETCD_SECRET)


def workloads(documents):
    """The DaemonSets and Deployments of a manifest, as ``{"daemonsets": [...], "deployments": [...]}`` of
    ``{namespace, name}`` (what to wait for after applying it)."""
    out = {"daemonsets": [], "deployments": []}
    for doc in documents or []:
        kind = isinstance(doc, dict) and doc.get("kind")
        if kind in ("DaemonSet", "Deployment"):
            meta = doc.get("metadata") or {}
            out[kind.lower() + "s"].append({"namespace": meta.get("namespace") or "default", "name": meta.get("name")})
    return out
