# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that turns what the collection shows or writes into its redacted form.

* ``redact_object(obj)``: a copy of any value (an object, a list of objects, a module result, a diff) where the
  values of a Secret's ``data`` and ``stringData`` are replaced by ``MARKER`` (the keys are kept, so a diff still
  says which key changed), and so are the Secret's ``kubectl.kubernetes.io/last-applied-configuration`` (kubectl
  keeps the whole Secret there), the ``spec.token`` and ``spec.certificate`` of a Calico Enterprise
  ``LicenseKey``, and the value under any key the caller marks sensitive (``keys``). A Secret is known by its
  ``kind``, or, as the items of a LIST come without one, by a ``type`` beside ``data``/``stringData`` and
  ``metadata`` (a ConfigMap has no ``type``).
* ``redact_text(text, values)``: ``text`` with every known secret value replaced by ``MARKER``, in each form it
  can take: as it is, base64-encoded, JSON-escaped (a PEM's newlines as ``\\n``), and each long line of a
  multi-line value (a PEM's body; not its armor lines, which every PEM shares).
* ``Redactor``: both at once for one module run, with the secret values the module was given (its ``no_log``
  options and the bearer token of ``K8S_AUTH_API_KEY``): ``Redactor.value()`` redacts a whole result, every
  string in it included. The module base (``k8s/module.py``) passes every result, failure and warning through
  it; the writers of records and artifacts pass what they write through ``redact_object``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import json
import os
import re


MARKER = "<redacted>"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SECRET_FIELDS = ("data", "stringData")
# kind -> paths (tuples of keys) whose value is secret in objects of that kind
SENSITIVE_PATHS = {
    "LicenseKey": (("spec", "token"), ("spec", "certificate")),
}
MIN_LINE = 16  # a line of a multi-line secret shorter than this is not searched for (too common)


def is_secret(obj):
    """Whether ``obj`` (a dict) is a Kubernetes Secret, with or without its ``kind`` (LIST items have none)."""
    if not isinstance(obj, dict):
        return False
    if obj.get("kind") == "Secret":
        return True
    if obj.get("kind") is not None:
        return False
    return (isinstance(obj.get("metadata"), dict) and isinstance(obj.get("type"), str)
            and any(isinstance(obj.get(f), dict) for f in SECRET_FIELDS))


def _mask_map(value):
    if isinstance(value, dict):
        return dict((k, MARKER) for k in value)
    return MARKER if value is not None else None


def _redact_paths(obj, paths):
    for path in paths:
        node = obj
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(path[-1]) is not None:
            node[path[-1]] = MARKER


def redact_object(obj, keys=()):
    """A redacted copy of ``obj`` (see the module's description); ``keys``: names of keys whose values are
    secret wherever they are (compared without case). Dicts, lists and tuples are copied as they are walked (one
    pass, no deep copy first); other values are immutable or not walked, and are shared with ``obj``."""
    lowered = frozenset(k.lower() for k in keys or ())
    return _walk(obj, lowered)


def _walk(obj, keys):
    if isinstance(obj, list):
        return [_walk(item, keys) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(item, keys) for item in obj)
    if not isinstance(obj, dict):
        return obj
    out = {}
    for key, value in obj.items():
        if isinstance(key, str) and key.lower() in keys and value is not None:
            out[key] = MARKER
        else:
            out[key] = _walk(value, keys)
    # ``out`` and every dict in it are new: masking them leaves ``obj`` as it was
    if is_secret(obj):
        for field in SECRET_FIELDS:
            if field in out:
                out[field] = _mask_map(out[field])
        metadata = out.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            annotations[LAST_APPLIED] = MARKER
    kind = obj.get("kind")
    if isinstance(kind, str) and kind in SENSITIVE_PATHS:
        _redact_paths(out, SENSITIVE_PATHS[kind])
    return out


def redact_secret_parts(obj):
    """A copy of ``obj`` - a Secret or any part of one without its ``kind`` (a merge patch, the paths a patch
    touches) - with the values of its ``data`` and ``stringData`` replaced by ``MARKER``."""
    out = copy.deepcopy(obj)
    if isinstance(out, dict):
        for field in SECRET_FIELDS:
            if field in out:
                out[field] = _mask_map(out[field])
        annotations = (out.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            annotations[LAST_APPLIED] = MARKER
    return out


# the API server quotes the object it refused in a 422: `Invalid value: "{\"apiVersion\":...}"` (Go's %q)
_QUOTED = re.compile(r'(Invalid value: )"((?:[^"\\]|\\.)*)"')


def redact_api_message(message, secret=False):
    """An API server's error message with the objects it quotes redacted (``redact_object``); ``secret``: the
    request was about a Secret, so a quoted value that is not an object is replaced whole. A dict or list (an API
    Status) has each of its strings redacted so."""
    if isinstance(message, dict):
        return dict((k, redact_api_message(v, secret)) for k, v in message.items())
    if isinstance(message, list):
        return [redact_api_message(v, secret) for v in message]
    if not isinstance(message, str) or "Invalid value" not in message:
        return message

    def one(match):
        try:
            obj = json.loads(json.loads('"%s"' % match.group(2)))
        except ValueError:
            obj = None
        if isinstance(obj, (dict, list)):
            shown = redact_object(redact_secret_parts(obj) if secret and isinstance(obj, dict) else obj)
            return match.group(1) + json.dumps(json.dumps(shown, sort_keys=True))
        return match.group(1) + ('"%s"' % MARKER if secret else match.group(0)[len(match.group(1)):])
    return _QUOTED.sub(one, message)


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


def forms(value):
    """The forms a secret value takes in output: itself, base64, JSON-escaped, and each long line of it."""
    value = _text(value)
    out = set()
    if not value.strip():
        return out
    for v in (value, value.strip()):
        out.add(v)
        out.add(base64.b64encode(v.encode("utf-8")).decode("ascii"))
        out.add(json.dumps(v)[1:-1])
        out.add(json.dumps(v, ensure_ascii=False)[1:-1])
    for line in value.splitlines():
        line = line.strip()
        if len(line) >= MIN_LINE and not line.startswith("-----"):
            out.add(line)
    return set(f for f in out if len(f) >= 4)


def redact_text(text, values):
    """``text`` with every form of every value of ``values`` replaced by ``MARKER`` (longest first)."""
    if not isinstance(text, str) or not text:
        return text
    all_forms = set()
    for value in values or ():
        all_forms.update(forms(value))
    return _replace_forms(text, sorted(all_forms, key=len, reverse=True))


def _replace_forms(text, ordered):
    """``text`` with each form of ``ordered`` (longest first) replaced by ``MARKER``: the one place that does it."""
    for form in ordered:
        if form in text:
            text = text.replace(form, MARKER)
    return text


def secret_values(value):
    """Every string inside ``value`` (a no_log option may be a dict or a list)."""
    if isinstance(value, dict):
        out = []
        for v in value.values():
            out.extend(secret_values(v))
        return out
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(secret_values(v))
        return out
    if isinstance(value, (str, bytes)) and _text(value).strip():
        return [_text(value)]
    return []


def module_secrets(argument_spec, params, env=None):
    """The secret values a module was given: its ``no_log`` options (at any depth of ``options``) and the bearer
    token kubernetes.core reads from ``K8S_AUTH_API_KEY`` when ``api_key`` is not set."""
    out = []

    def walk(spec, values):
        for name, option in (spec or {}).items():
            value = (values or {}).get(name) if isinstance(values, dict) else None
            if option.get("no_log"):
                out.extend(secret_values(value))
            elif option.get("options") and value is not None:
                for item in value if isinstance(value, list) else [value]:
                    walk(option["options"], item)
    walk(argument_spec, params)
    env = os.environ if env is None else env
    for name in ("K8S_AUTH_API_KEY", "K8S_AUTH_PASSWORD"):
        if env.get(name):
            out.append(env[name])
    return out


class Redactor(object):
    """Redaction for one module run: Secret data, sensitive kinds and keys (``redact_object``) and the known
    secret values in every string (``redact_text``)."""

    def __init__(self, values=(), keys=()):
        self.values = [v for v in values if v]
        self.keys = tuple(keys or ())
        self._forms = None  # every form of every value, longest first (computed once, again after ``add``)

    @classmethod
    def for_module(cls, module, argument_spec, keys=()):
        return cls(module_secrets(argument_spec, module.params), keys)

    def add(self, *values):
        self.values.extend(v for v in values if v)
        self._forms = None

    def _all_forms(self):
        if self._forms is None:
            found = set()
            for value in self.values:
                found.update(forms(value))
            self._forms = sorted(found, key=len, reverse=True)
        return self._forms

    def text(self, text):
        if not isinstance(text, str) or not text:
            return text
        return _replace_forms(text, self._all_forms())

    def value(self, value):
        """A redacted copy of ``value``: objects (``redact_object``), then every string in it (``text``; not walked
        when the run was given no secret value, as there is nothing to find)."""
        value = redact_object(value, self.keys)
        return self._strings(value) if self._all_forms() else value

    def _strings(self, value):
        if isinstance(value, dict):
            return dict((self._strings(k) if isinstance(k, str) else k, self._strings(v))
                        for k, v in value.items())
        if isinstance(value, list):
            return [self._strings(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self._strings(v) for v in value)
        if isinstance(value, str):
            return self.text(value)
        return value
