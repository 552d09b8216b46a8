# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: merge patch one object only when the patch changes it (the ``merge_patch`` module's runner).

The object is read first; the JSON merge patch (RFC 7386) is applied locally (``apply_merge_patch``); when
the result equals the object nothing is sent (``changed=false``, no write request at all). Otherwise one
PATCH (``application/merge-patch+json``) is sent, with ``metadata.resourceVersion`` when asked so the server
refuses a stale change (409). A missing object is created from ``create`` (POST), skipped, or an error.
In check mode the same decision is made and nothing is sent (the ``Client`` refuses writes).

The diff shows only the paths the patch touches (``patch_view``), before and after.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError

MISSING_CHOICES = ("fail", "skip", "create")
_NOISE = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation")


def apply_merge_patch(target, patch):
    """RFC 7386: a dict patch merges key by key (``None`` removes a key); anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def patch_view(obj, patch):
    """The parts of ``obj`` that ``patch`` touches (absent keys are left out): what a diff should show.

    A map the patch sets leaves in (no nested map in the patch) is shown whole, so the diff also shows the
    keys that stay (``nodeSelector`` with its other labels)."""
    if not isinstance(patch, dict) or not isinstance(obj, dict):
        return copy.deepcopy(obj)
    if patch and not any(isinstance(v, dict) for v in patch.values()):
        return copy.deepcopy(obj)
    out = {}
    for key, value in patch.items():
        if key not in obj:
            continue
        if isinstance(value, dict) and isinstance(obj[key], dict):
            out[key] = patch_view(obj[key], value)
        else:
            out[key] = copy.deepcopy(obj[key])
    return out


def strip_noise(obj):
    """An object without server bookkeeping (managedFields, resourceVersion, uid, ...) for a diff."""
    out = copy.deepcopy(obj or {})
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in _NOISE:
            meta.pop(key, None)
    out.pop("status", None)
    return out


def describe(api_version, plural, name, namespace=None):
    return "%s %s%s" % ("%s/%s" % (api_version, plural), "%s/" % namespace if namespace else "", name)


def run_merge_patch(client, api_version, plural, name, patch, namespace=None, missing="fail", create=None,
                    lock=False, want_diff=False):
    """Read, compare, patch (or create). Returns the module result (``changed``, ``exists``, ``created``,
    ``before``/``after`` views, ``object``, ``diff`` when asked, ``api_requests``)."""
    what = describe(api_version, plural, name, namespace)
    patch = patch or {}
    current = client.get(api_version, plural, name, namespace=namespace)
    result = {"changed": False, "exists": current is not None, "created": False, "object": current,
              "patch": patch, "resource": what}
    if current is None:
        if missing == "skip":
            result["msg"] = "%s does not exist: nothing to patch" % what
            result["api_requests"] = dict(client.requests)
            return result
        if missing != "create" or not create:
            raise ClientError("%s does not exist" % what, status=404)
        body = copy.deepcopy(create)
        body.setdefault("metadata", {})
        body["metadata"].setdefault("name", name)
        if namespace:
            body["metadata"].setdefault("namespace", namespace)
        body = apply_merge_patch(body, patch)
        result.update(changed=True, created=True, before={}, after=strip_noise(body))
        if want_diff:
            result["diff"] = {"before": {}, "after": strip_noise(body),
                              "before_header": "%s (absent)" % what, "after_header": "%s (created)" % what}
        if not client.check_mode:
            result["object"] = client.create(api_version, plural, body, namespace=namespace)
        else:
            result["object"] = body
        result["msg"] = "%s created" % what
        result["api_requests"] = dict(client.requests)
        return result

    wanted = apply_merge_patch(current, patch)
    result["before"] = patch_view(current, patch)
    result["after"] = patch_view(wanted, patch)
    if wanted == current:
        result["msg"] = "%s already as wanted" % what
        result["api_requests"] = dict(client.requests)
        return result
    result["changed"] = True
    if want_diff:
        result["diff"] = {"before": result["before"], "after": result["after"],
                          "before_header": "%s (before)" % what, "after_header": "%s (after)" % what}
    body = copy.deepcopy(patch)
    if lock:
        body.setdefault("metadata", {})
        body["metadata"]["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
    if not client.check_mode:
        result["object"] = client.merge_patch(api_version, plural, name, body, namespace=namespace)
    else:
        result["object"] = wanted
    result["msg"] = "%s patched" % what
    result["api_requests"] = dict(client.requests)
    return result
