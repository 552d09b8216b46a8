# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readers of the workloads of a manifest install and the comparisons with the release's own manifest, shared by the
rules of the move to the operator (customisations.py, installation.py, rules.py). No I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import container, env_value


NODE_CONTAINER = "calico-node"


CNI_CONTAINER = "install-cni"


MIGRATION_LABEL = "projectcalico.org/operator-node-migration"


OS_SELECTORS = ("kubernetes.io/os", "beta.kubernetes.io/os")


# annotations a manifest install carries that are not the user's
IGNORED_ANNOTATION_PREFIXES = ("kubectl.kubernetes.io/", "deprecated.daemonset.template.generation",
                               "deployment.kubernetes.io/", "meta.helm.sh/", "scheduler.alpha.kubernetes.io/")


def annotations_of(obj):
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def template_annotations_of(obj):
    return ((((obj or {}).get("spec") or {}).get("template") or {}).get("metadata") or {}).get("annotations") or {}


def env_names(cont):
    return [e.get("name") for e in (cont or {}).get("env") or []]


def env_entry(cont, name):
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


def same(a, b):
    return json.dumps(normalise(a), sort_keys=True) == json.dumps(normalise(b), sort_keys=True)


def same_env(a, b):
    """Two env entries set the same thing (a literal, or the same source)."""
    return same(a, b)


def env_text(cont, name, configmaps):
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


def new_item(where, name, value, release_value=None, maps_to=None, refused=None, fix=None):
    out = {"where": where, "name": name, "value": value, "release_value": release_value}
    if refused:
        out.update(refused=refused, fix=fix or "")
    else:
        out["maps_to"] = maps_to
    return out


def cni_json(configmap):
    """The CNI configuration of ConfigMap calico-config, parsed: install-cni fills its ``__NAME__`` placeholders
    (``"mtu": __CNI_MTU__`` is bare), so a bare placeholder is read as 0 first. ValueError when it is not JSON."""
    text = ((configmap or {}).get("data") or {}).get("cni_network_config") or "{}"
    return json.loads(re.sub(r'(?<!")__[A-Z0-9_]+__(?!")', "0", text))
