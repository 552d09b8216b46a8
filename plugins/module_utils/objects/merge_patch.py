# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: patch one object only when the API server says the patch changes it (the ``merge_patch`` module's
runner).

The merge is the API server's own, never computed here: the object is read, the patch is sent as a server-side
dry run (``dryRun=All``), and the object the server answers (merged, defaulted, validated, admitted) is compared
with the live one. When they are equal nothing is written (``changed=false``, no write request at all);
otherwise the same PATCH is sent for real. Check mode stops after the dry run. The diff is live object vs dry-run
answer, shown on the paths the patch touches (``patch_view``).

The patch type: ``strategic`` (``application/strategic-merge-patch+json``: lists merge on the keys the API
declares, so a patch of one Service port leaves the others) for the built-in API groups, ``merge`` (RFC 7386
``application/merge-patch+json``: lists are replaced whole) for custom resources, which have no strategic merge
(the server answers 415: ``auto`` falls back to ``merge`` then). ``lock`` sends the read
``metadata.resourceVersion`` with the patch, so the server refuses (409) a change made since.

A missing object is created from ``create`` (with ``patch`` merged into it as an RFC 7386 merge patch of the two
dicts the task gives: ``apply_merge_patch``), skipped, or an error (404, named). The creation is dry-run first too: check
mode and the diff show the server's answer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError, api_path
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import advice, describe_object

MISSING_CHOICES = ("fail", "skip", "create")
PATCH_TYPES = ("auto", "strategic", "merge")
CONTENT_TYPES = {"strategic": "application/strategic-merge-patch+json", "merge": "application/merge-patch+json"}
_NOISE = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation")


def apply_merge_patch(target, patch):
    """RFC 7386 on two dicts of the task (``create`` and ``patch``): a dict patch merges key by key (``None``
    removes a key); anything else replaces. Only for the body of an object to create: a live object is always
    merged by the API server."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def default_patch_type(api_version):
    """``strategic`` for the built-in API groups (core, ``apps``, ``*.k8s.io``), ``merge`` for the others (custom
    resources have no strategic merge)."""
    group = (api_version or "").rpartition("/")[0]
    return "strategic" if not group or "." not in group or group.endswith(".k8s.io") else "merge"


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


def _send(client, api_version, plural, name, namespace, body, patch_type, dry_run):
    return client.request("PATCH", api_path(api_version, plural, namespace, name), body=body,
                          content_type=CONTENT_TYPES[patch_type], query={"fieldManager": client.field_manager},
                          dry_run=dry_run)


def server_merge(client, api_version, plural, name, namespace, body, patch_type="auto"):
    """The server's dry-run answer to the patch, and the patch type it took (``auto``: ``strategic`` for a
    built-in group, ``merge`` for others or when the server refuses a strategic merge with 415)."""
    kind = default_patch_type(api_version) if patch_type == "auto" else patch_type
    failure = None
    try:
        return _send(client, api_version, plural, name, namespace, body, kind, True), kind
    except ClientError as exc:
        if not (patch_type == "auto" and kind == "strategic" and exc.status == 415):
            raise
        failure = exc
    if failure is not None:  # an aggregated or CRD type in a built-in-looking group: no strategic merge there
        kind = "merge"
    return _send(client, api_version, plural, name, namespace, body, kind, True), kind


def run_merge_patch(client, api_version, plural, name, patch, namespace=None, missing="fail", create=None,
                    lock=False, want_diff=False, patch_type="auto"):
    """Read, dry-run, compare, patch (or create). Returns the module result (``changed``, ``exists``,
    ``created``, ``before``/``after`` views, ``object``, ``patch_type``, ``diff`` when asked, ``api_requests``)."""
    what = describe_object(api_version, plural, namespace, name)
    patch = patch or {}
    current = client.get(api_version, plural, name, namespace=namespace)
    result = {"changed": False, "exists": current is not None, "created": False, "object": current,
              "patch": patch, "resource": what}
    if current is None:
        if missing == "skip":
            result["msg"] = "%s does not exist: nothing to patch" % what
        elif missing != "create" or not create:
            raise ClientError("%s: 404 Not Found (GET %s); %s" % (
                what, api_path(api_version, plural, namespace, name), advice(404)), status=404,
                reason="Not Found", what=what)
        else:
            _create(client, api_version, plural, name, namespace, apply_merge_patch(_named(create, name, namespace), patch),
                    what, want_diff, result)
    elif not patch:  # an empty patch changes nothing: not even a dry run (missing=create of an existing object)
        result.update(before={}, after={}, msg="%s exists: nothing to patch" % what)
    else:
        _patch(client, api_version, plural, name, namespace, patch, current, lock, patch_type, what, want_diff, result)
    result["api_requests"] = dict(client.requests)
    return result


def _named(create, name, namespace):
    """A copy of the object to create, with the name and namespace the task gave filled in where it has none."""
    body = copy.deepcopy(create)
    body.setdefault("metadata", {})
    body["metadata"].setdefault("name", name)
    if namespace:
        body["metadata"].setdefault("namespace", namespace)
    return body


def _create(client, api_version, plural, name, namespace, body, what, want_diff, result):
    """missing=create: dry-run the creation (shown as before {} / after), then create unless in check mode."""
    try:
        dry = client.create(api_version, plural, body, namespace=namespace, dry_run=True)
    except ClientError as exc:
        # check mode only: the namespace is missing because an earlier task, which check mode did not run,
        # creates it; the server cannot dry-run into it, so the creation is the body as it would be sent
        if not (client.check_mode and namespace and exc.status == 404
                and client.get("v1", "namespaces", namespace) is None):
            raise
        dry = body
        result["warnings"] = ["check mode: namespace %s does not exist yet, so %s was not dry-run by the API "
                              "server; shown as it would be sent" % (namespace, what)]
    result.update(changed=True, created=True, before={}, after=strip_noise(dry))
    if want_diff:
        result["diff"] = {"before": {}, "after": strip_noise(dry),
                          "before_header": "%s (absent)" % what, "after_header": "%s (created)" % what}
    if client.check_mode:
        result["object"] = dry
    else:
        result["object"] = client.create(api_version, plural, body, namespace=namespace)
    result["msg"] = "%s created" % what


def _patch(client, api_version, plural, name, namespace, patch, current, lock, patch_type, what, want_diff, result):
    """The server's own merge, dry-run first: patched only when the dry run differs from what is there."""
    body = copy.deepcopy(patch)
    if lock:
        body.setdefault("metadata", {})
        body["metadata"]["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
    dry, kind = server_merge(client, api_version, plural, name, namespace, body, patch_type)
    result["patch_type"] = kind
    result["before"] = patch_view(current, patch)
    result["after"] = patch_view(dry, patch)
    if strip_noise(dry) == strip_noise(current):
        result["msg"] = "%s already as wanted" % what
        return
    result["changed"] = True
    if want_diff:
        result["diff"] = {"before": result["before"], "after": result["after"],
                          "before_header": "%s (before)" % what, "after_header": "%s (after)" % what}
    result["object"] = dry if client.check_mode else _send(client, api_version, plural, name, namespace, body,
                                                           kind, False)
    result["msg"] = "%s patched" % what
