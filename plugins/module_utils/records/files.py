# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller-side copy of a job's record: written atomically (a temporary file renamed over the old one),
and found again by job and cluster when the ConfigMaps are gone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError

DATA_KEY = "record.json"
RECORD_LABEL = "lifecycle.calico-ops.io/record"
MANAGED_BY = {"app.kubernetes.io/managed-by": "calico-ops"}
# where a job's record file goes when the caller names none (on the host that runs the module)
DEFAULT_RECORD_DIR = "~/.calico_ops/records"


class RecordStoreError(Exception):
    """The record could not be read or written; nothing that depends on it may go on."""


def default_record_path(name, cluster):
    return os.path.join(DEFAULT_RECORD_DIR, "%s-%s.json" % (name, cluster or "cluster"))


def atomic_write(path, text):
    """Write ``text`` (str, or bytes) to ``path`` so that a reader sees the old or the new content, never a mix; the
    file is 0600 from the moment it exists (``mkstemp``), a missing directory is made 0700."""
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _describe_doc(doc):
    entries = doc.get("entries") or {}
    done = sum(1 for e in entries.values() if isinstance(e, dict) and e.get("done"))
    return len(entries), len(entries) - done


def find_records(client, job, directories, cluster=None, max_files=500):
    """Records of ``job`` wherever this collection puts them: ConfigMaps labelled as records in any namespace
    (chunk 0), and JSON files in ``directories`` (of this cluster, when ``cluster`` is known).

    Returns ``(found, unsearched)``: ``found`` entries ``{"where", "kind", "namespace", "name", "path",
    "entries", "pending"}`` (a ConfigMap's counts are those of its chunk 0); ``unsearched`` says what could not
    be searched and why. Reads only; used to say where a record is when it is not where the user said.
    """
    found, unsearched = [], []
    try:
        items = client.list("v1", "configmaps", label_selector=RECORD_LABEL)
    except ClientError as exc:
        items = []
        unsearched.append("ConfigMaps of other namespaces (%s)" % (exc.status or exc))
    for cm in items:
        meta = cm.get("metadata") or {}
        try:
            doc = json.loads((cm.get("data") or {}).get(DATA_KEY) or "")
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("job") != job or int(doc.get("chunk") or 0) != 0:
            continue
        if cluster and doc.get("cluster") and doc.get("cluster") != cluster:
            continue
        entries, pending = _describe_doc(doc)
        found.append({"where": "ConfigMap %s/%s" % (meta.get("namespace"), meta.get("name")), "kind": "ConfigMap",
                      "namespace": meta.get("namespace"), "name": doc.get("record"), "path": None,
                      "entries": entries, "pending": pending})
    seen = set()
    for directory in directories:
        directory = os.path.abspath(os.path.expanduser(directory))
        if directory in seen or not os.path.isdir(directory):
            continue
        seen.add(directory)
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))[:max_files]
        except OSError as exc:
            unsearched.append("directory %s (%s)" % (directory, exc))
            continue
        for name in names:
            path = os.path.join(directory, name)
            try:
                with open(path, "r") as handle:
                    doc = json.load(handle)
            except (IOError, OSError, ValueError):
                continue
            if not isinstance(doc, dict) or doc.get("job") != job:
                continue
            if cluster and doc.get("cluster") and doc.get("cluster") != cluster:
                continue
            entries, pending = _describe_doc(doc)
            found.append({"where": "file %s" % path, "kind": "file", "namespace": None, "name": doc.get("record"),
                          "path": path, "entries": entries, "pending": pending})
    return found, unsearched
