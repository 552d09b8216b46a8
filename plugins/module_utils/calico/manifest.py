# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: edit Calico release manifests (multi-document YAML) as plain Python.

Only the document that is edited is re-serialised; every other document keeps its original text byte for
byte, so a reviewer diffing the edited file against the download sees exactly what changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - modules report it with missing_required_lib
    HAS_YAML = False

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import yaml_text

_SEPARATOR = re.compile(r"^---[ \t]*(?:#.*)?$", re.M)

DATAPLANES = ("Iptables", "BPF", "Nftables", "VPP")
VARIANTS = ("Calico", "TigeraSecureEnterprise")


class ManifestError(ValueError):
    """The manifest is not what the edit expects (no Installation, several, unparsable YAML)."""


def document_segments(text):
    """The text cut at ``---`` lines: ``(segments, separators)``, with
    ``text == segments[0] + separators[0] + segments[1] + ...``."""
    segments, separators, pos = [], [], 0
    for match in _SEPARATOR.finditer(text):
        segments.append(text[pos:match.start()])
        separators.append(match.group(0))
        pos = match.end()
    segments.append(text[pos:])
    return segments, separators


def parse_segment(segment):
    try:
        return yaml_text.load(segment)
    except yaml_text.YAMLError as exc:
        raise ManifestError("the manifest is not valid YAML: %s" % exc)


def split_documents(text):
    """The raw text of each non-empty document (separators removed)."""
    return [seg for seg in document_segments(text)[0] if parse_segment(seg) is not None]


def load_documents(text):
    """Every non-empty document of a multi-document YAML text, as dicts."""
    try:
        return [d for d in yaml_text.load_all(text) if d is not None]
    except yaml_text.YAMLError as exc:
        raise ManifestError("the manifest is not valid YAML: %s" % exc)


def deep_merge(base, overrides):
    """Merge ``overrides`` into a copy of ``base``: dicts merge key by key, anything else replaces, and a
    ``None`` value removes the key (as in a JSON merge patch)."""
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in (overrides or {}).items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def edit_installation(doc, linux_dataplane=None, variant=None, flex_volume_path=None, spec_overrides=None):
    """A copy of an ``Installation`` document with the eBPF settings applied.

    ``spec.calicoNetwork.linuxDataplane`` and ``spec.variant`` are set when given; ``spec.flexVolumePath``
    only when ``flex_volume_path`` is given (EKS with Bottlerocket nodes); ``spec_overrides`` is merged into
    ``spec`` last, so the user has the final word.
    """
    out = copy.deepcopy(doc)
    spec = out.setdefault("spec", {}) or {}
    out["spec"] = spec
    if linux_dataplane:
        network = spec.get("calicoNetwork") or {}
        network["linuxDataplane"] = linux_dataplane
        spec["calicoNetwork"] = network
    if variant:
        spec["variant"] = variant
    if flex_volume_path:
        spec["flexVolumePath"] = flex_volume_path
    if spec_overrides:
        out["spec"] = deep_merge(spec, spec_overrides)
    return out


def _is_installation(doc):
    return (isinstance(doc, dict) and doc.get("kind") == "Installation"
            and str(doc.get("apiVersion", "")).startswith("operator.tigera.io/"))


def render_custom_resources(text, linux_dataplane="BPF", variant=None, flex_volume_path=None,
                            spec_overrides=None, exclude_kinds=()):
    """Edit the Installation of a ``custom-resources.yaml`` and leave every other document untouched.

    Returns ``(edited_text, documents, installation)``: the text to keep as the review artifact, the
    documents to create (those of a kind in ``exclude_kinds`` left out), and the edited Installation.
    """
    segments, separators = document_segments(text)
    parsed = [parse_segment(seg) for seg in segments]
    installs = [i for i, d in enumerate(parsed) if _is_installation(d)]
    if not installs:
        raise ManifestError("the manifest has no Installation (operator.tigera.io) document")
    if len(installs) > 1:
        raise ManifestError("the manifest has %d Installation documents; expected one" % len(installs))
    index = installs[0]
    installation = edit_installation(parsed[index], linux_dataplane, variant, flex_volume_path, spec_overrides)
    if installation != parsed[index]:
        old = segments[index]
        lead = old[:len(old) - len(old.lstrip("\n"))]
        comments = "".join(line + "\n" for line in old.strip("\n").splitlines() if line.startswith("#"))
        trail = "\n" if old.endswith("\n\n") else ""
        segments[index] = lead + comments + yaml.safe_dump(installation, default_flow_style=False,
                                                           sort_keys=False) + trail
    parsed[index] = installation
    edited_text = segments[0] + "".join(sep + seg for sep, seg in zip(separators, segments[1:]))
    parsed = [d for d in parsed if d is not None]
    excluded = set(exclude_kinds or ())
    documents = [d for d in parsed if isinstance(d, dict) and d.get("kind") not in excluded]
    return edited_text, documents, installation
