# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Before a job's first write: can its record be kept where it was told?

A job that records what it removes must be able to write that record before it removes anything: a record that
cannot be written is found out only at the first checkpoint otherwise, after the job has changed the cluster (and
a re-run, a crash recovery or another controller would then find a stale record). So every job with a record
proves the location first, writing nothing:

* the ConfigMap: a server-side dry run (``dryRun=All``) of the write the job will make - a create when the record is
  new, a replace of the same object when it exists, a server-side apply for the roles that apply their record. The
  API server answers it as it would the real write: the namespace is missing (404), the job's identity may not
  write ConfigMaps there (403), the name is not valid (422);
* the controller file (where the job keeps one): the path is not a directory, its nearest existing ancestor is a
  directory this process may write into (``os.access``, and not a read-only file system), an existing file is a
  regular file this process may write. Nothing is created (not even the directory).

A failure names the variable to fix (``<prefix>record_namespace``, ``<prefix>record_name``, ``<prefix>record_path``,
where the prefix is a role's variable prefix such as ``owner_references_``, or empty for a module's own options),
says what is wrong, and that nothing was written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.files import (
    MANAGED_BY, RecordStoreError, default_record_path)


def variable_names(prefix=None):
    """The names of the record's variables: a module's options (no prefix) or a role's (``prefix``)."""
    return dict((key, "%srecord_%s" % (prefix or "", key)) for key in ("namespace", "name", "path"))


def configmap_problem(exc, namespace, name, names):
    """The line for a refused dry run of the record ConfigMap's write (``exc``: the ClientError), naming the
    variable to fix."""
    where = "ConfigMap %s/%s" % (namespace, name)
    if exc.status == 404:
        return ("%s: the record namespace %r does not exist (the API answered the dry run of %s: %s); create it or "
                "choose another" % (names["namespace"], namespace, where, exc))
    if exc.status in (401, 403):
        return ("%s: the job's identity may not write the record %s (dry run: %s); grant create, get and update on "
                "configmaps in that namespace (docs/rbac.yml) or choose another namespace"
                % (names["namespace"], where, exc))
    if exc.status == 422:
        return "%s: %r is not a valid ConfigMap name for the record (dry run: %s)" % (names["name"], name, exc)
    return "%s / %s: the record %s cannot be written (dry run: %s)" % (names["namespace"], names["name"], where, exc)


def check_configmap(client, body, how="create", names=None):
    """The line of what stops ``body`` (a ConfigMap) from being written, or None: a server-side dry run of the write
    the job will make - ``create``, ``replace`` (``body`` carries the resourceVersion read) or ``apply``."""
    names = names or variable_names()
    meta = body.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name")
    try:
        if how == "apply":
            client.apply("v1", "configmaps", body, namespace=namespace, dry_run=True)
        elif how == "replace":
            client.replace("v1", "configmaps", body, namespace=namespace, dry_run=True)
        else:
            client.create("v1", "configmaps", body, namespace=namespace, dry_run=True)
    except ClientError as exc:
        if how == "create" and exc.status == 409:
            return None  # created meanwhile: the identity may create there
        return configmap_problem(exc, namespace, name, names)
    return None


def _nearest_existing(path):
    current = path
    while not os.path.lexists(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return current


def _read_only(path):
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (AttributeError, OSError):
        return False


def check_file(path, names=None, given=True, what="the record file"):
    """The line of what stops the file ``path`` (``what``: the record file, an archive) from being written, or None.
    Writes nothing."""
    names = names or variable_names()
    path = os.path.abspath(os.path.expanduser(path))
    hint = "" if given else " (the default path; set %s to another)" % names["path"]
    if os.path.isdir(path):
        return "%s: %s is a directory, not a file for %s%s" % (
            names["path"], path, "the record" if what == "the record file" else what, hint)
    if os.path.lexists(path):
        if not os.path.isfile(path):
            return "%s: %s exists and is not a regular file%s" % (names["path"], path, hint)
        if not os.access(path, os.W_OK) or _read_only(path):
            return "%s: %s %s is not writable by this process%s" % (names["path"], what, path, hint)
        return None
    anchor = _nearest_existing(os.path.dirname(path))
    if not os.path.isdir(anchor):
        return ("%s: %s %s cannot be created: %s is not a directory%s"
                % (names["path"], what, path, anchor, hint))
    if not os.access(anchor, os.W_OK | os.X_OK) or _read_only(anchor):
        return ("%s: %s %s cannot be created: %s is not writable by this process%s"
                % (names["path"], what, path, anchor, hint))
    return None


def require_usable(problems, error):
    """Raise ``error`` when any problem was found (``problems``: lines or None), its message every problem and that
    nothing was written."""
    found = [p for p in problems if p]
    if found:
        raise error("%s; nothing was written" % "; ".join(found))


def cluster_id(client):
    """The UID of namespace kube-system: identifies the cluster a record belongs to (None if unreadable)."""
    try:
        ns = client.get("v1", "namespaces", "kube-system")
    except ClientError:
        return None
    return ((ns or {}).get("metadata") or {}).get("uid")


def check_record_location(client, namespace, name, how="apply", path=None, keeps_file=False, variable_prefix=None):
    """Prove, writing nothing, that a record can be kept at ConfigMap ``namespace/name`` (written by server-side
    apply, ``how="apply"``, as the roles write theirs; or as a RecordStore writes it, ``how="store"``: a create, or a
    replace of the object that exists) and, with ``path`` or ``keeps_file`` (a RecordStore's default path then),
    in that file. For the roles whose first write comes before a module that opens its own record. Returns what was
    checked; raises RecordStoreError naming each variable to fix."""
    names = variable_names(variable_prefix)
    existing, problems = None, []
    if how == "store":
        try:
            existing = client.get("v1", "configmaps", name, namespace=namespace)
        except ClientError as exc:
            problems.append(configmap_problem(exc, namespace, name, names))
    if not problems:
        if existing is not None:  # a RecordStore replaces the record it read
            problems.append(check_configmap(client, existing, how="replace", names=names))
        else:
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)}}
            problems.append(check_configmap(client, body, how="apply" if how == "apply" else "create", names=names))
    if path or keeps_file:
        given = bool(path)
        path = os.path.abspath(os.path.expanduser(path or default_record_path(name, cluster_id(client))))
        problems.append(check_file(path, names=names, given=given))
    require_usable(problems, error=RecordStoreError)
    return {"namespace": namespace, "name": name, "exists": existing is not None if how == "store" else None,
            "path": path or None}
