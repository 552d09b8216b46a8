# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: keep a durable record of the steps of a long, destructive job, in two places.

A record is a set of *entries*, each under a stable key chosen by the job, each with a ``done`` flag.
It is kept

* in the cluster, as one or more ConfigMaps in a namespace the user chooses: ``<name>`` (chunk 0),
  ``<name>-1``, ``<name>-2``, ... each holding the JSON of a share of the entries under the data key
  ``record.json`` and labelled ``lifecycle.calico-ops.io/record``. A chunk holds at most ~900 KiB, well
  under the 1 MiB ConfigMap limit. Every update is a PUT guarded by the resourceVersion that was read: a
  concurrent writer makes it fail with 409, and the store then re-reads, merges and tries again;
* in a JSON file, written atomically (temporary file in the same directory, fsync, ``os.replace``, fsync
  of the directory). The path is on the host that runs the module; this collection's playbooks run
  against ``localhost`` with ``connection: local``, so that is the Ansible controller.

``load()`` reads both and merges them entry by entry: the more advanced state wins (``done`` beats not
done, then the higher ``revision``, which ``update()`` raises by one each time). A job can therefore
resume from either copy alone (a deleted ConfigMap, a lost controller).

``save()`` writes the ConfigMaps first and the file second; a job that must record *before* it acts calls
``save()`` and acts only when it returned. Entries never move to a lower chunk and chunks are written from
the highest index down, so a crash between two chunk writes can duplicate an entry (merged away on load)
but never lose one.

A client in check mode cannot write, and ``save()`` refuses at once in check mode (nothing is written to
the file either).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import json
import os
import re
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import redact_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.files import (
    DATA_KEY, MANAGED_BY, RECORD_LABEL, RecordStoreError, atomic_write, default_record_path)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.location import (
    check_configmap, check_file, cluster_id, require_usable, variable_names)

FORMAT = 1
# a ConfigMap may hold 1 MiB; leave room for metadata and for entries growing when they are marked done
CHUNK_BYTES = 900 * 1024
# new entries fill a chunk up to this share of it: an entry marked done grows (owner references: ~400 -> ~500
# bytes), and a chunk that overflows passes its last entries on to the next one, which then overflows in turn:
# filled to the brim, every checkpoint of an attach rewrote every chunk after the one being worked on; with room to
# grow it rewrites the chunks whose entries changed (benchmarks/results/design-measurements.md)
CHUNK_FILL = 0.75
SAVE_RETRIES = 8


def utc_now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def label_value(name):
    """A valid label value naming the record (names longer than 63 characters are shortened + hashed)."""
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    return re.sub(r"[^A-Za-z0-9]+$", "", name[:52]) + "-" + digest


def _dumps(value):
    return json.dumps(redact_object(value), sort_keys=True, separators=(",", ":"))


# stands for a document's "entries" while the rest of it is serialized; replaced by the entries' own JSON
_ENTRIES_SLOT = "\u0000calico-ops-record-entries\u0000"


def _dumps_around(doc, entries_json):
    """``_dumps(doc)`` where ``doc["entries"]`` is already serialized as ``entries_json`` (the same text, as keys
    are sorted and separators compact either way)."""
    holder = dict(doc)
    holder["entries"] = _ENTRIES_SLOT
    return _dumps(holder).replace(json.dumps(_ENTRIES_SLOT), entries_json, 1)


def more_advanced(a, b):
    """The entry of two copies that is further along: done beats not done, then the higher revision.

    On a tie the first one is kept.
    """
    if bool(a.get("done")) != bool(b.get("done")):
        return a if a.get("done") else b
    if int(b.get("revision") or 0) > int(a.get("revision") or 0):
        return b
    return a


def open_record_store(client, namespace, name, record_path, job, variable_prefix=None):
    """The job's record (ConfigMaps ``name`` in ``namespace`` and the file ``record_path``, by default
    ``DEFAULT_RECORD_DIR/<name>-<cluster id>.json``), loaded; a record of another cluster is refused. Before it is
    returned, its location is proven usable (``RecordStore.check_location``, writing nothing): a job opens its
    record before its first write, so a record it could not keep stops it before it changes anything.
    ``variable_prefix`` is put before the option names a failure gives (``<prefix>record_namespace``, ...)."""
    cid = cluster_id(client)
    store = RecordStore(client, namespace, name, record_path or default_record_path(name, cid), job, cluster_id=cid)
    store.load()
    store.check_location(variable_prefix, path_given=bool(record_path))
    return store


class RecordStore(object):
    """The entries of one job's record, loaded from and saved to a ConfigMap set and a file."""

    def __init__(self, client, namespace, name, path, job, cluster_id=None, chunk_bytes=CHUNK_BYTES,
                 merge=more_advanced):
        if not namespace or not name or not path:
            raise RecordStoreError("a record needs a namespace, a ConfigMap name and a file path")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.path = os.path.abspath(os.path.expanduser(path))
        self.job = job
        self.cluster_id = cluster_id
        self.chunk_bytes = chunk_bytes
        self.merge = merge
        self.entries = {}
        self.meta = {}
        self.loaded_from = {"configmaps": 0, "file": False}
        self._chunk_of = {}      # key -> chunk index where the cluster copy holds it
        self._chunks = {}        # index -> {"rv": resourceVersion, "text": persisted data}
        self._file_text = None   # what the file holds (None: unknown / absent)
        # key -> (entry, '"key":' + its redacted JSON): an entry is replaced, never changed in place (add, update
        # and the merge of a load make new dicts), so the text of the same object is still right; a checkpoint of
        # a large record then serializes only the entries that changed since the last one
        self._texts = {}
        # chunk index -> (its keys, their entries, the entries' JSON): a chunk none of whose entries changed is
        # not joined again (a checkpoint of an attach changes one or two chunks of many)
        self._parts = {}

    # -- names ---------------------------------------------------------------------------------------

    def chunk_name(self, index):
        return self.name if index == 0 else "%s-%d" % (self.name, index)

    @property
    def configmaps(self):
        return [self.chunk_name(i) for i in sorted(self._chunks)]

    def describe(self):
        done = sum(1 for e in self.entries.values() if e.get("done"))
        return {"namespace": self.namespace, "name": self.name, "configmaps": self.configmaps,
                "path": self.path, "entries": len(self.entries), "done": done,
                "pending": len(self.entries) - done}

    # -- entries -------------------------------------------------------------------------------------

    def get(self, key):
        return self.entries.get(key)

    def add(self, key, entry):
        """Add an entry (not done) unless the key is already recorded; True when it was added."""
        if key in self.entries:
            return False
        entry = dict(entry)
        entry.setdefault("done", False)
        entry.setdefault("revision", 1)
        entry.setdefault("recorded_at", utc_now())
        self.entries[key] = entry
        return True

    def update(self, key, **fields):
        entry = dict(self.entries[key])
        entry.update(fields)
        entry["revision"] = int(entry.get("revision") or 0) + 1
        self.entries[key] = entry
        return entry

    def mark_done(self, key, **fields):
        fields["done"] = True
        fields.setdefault("done_at", utc_now())
        return self.update(key, **fields)

    def chunk_of(self, key):
        """The ConfigMap chunk holding ``key`` in the cluster copy (new keys: the last one)."""
        if key in self._chunk_of:
            return self._chunk_of[key]
        return max(self._chunk_of.values()) if self._chunk_of else 0

    def pending(self):
        return sorted(k for k, e in self.entries.items() if not e.get("done"))

    # -- loading -------------------------------------------------------------------------------------

    def _merge_in(self, entries, chunk=None):
        for key, entry in (entries or {}).items():
            if not isinstance(entry, dict):
                continue
            mine = self.entries.get(key)
            self.entries[key] = entry if mine is None else self.merge(mine, entry)
            if chunk is not None and (key not in self._chunk_of or chunk < self._chunk_of[key]):
                self._chunk_of[key] = chunk

    def _check_cluster(self, doc, where):
        theirs = doc.get("cluster")
        if self.cluster_id and theirs and theirs != self.cluster_id:
            raise RecordStoreError(
                "%s belongs to another cluster (cluster id %s, this cluster is %s): refusing to mix records; "
                "choose another record path/name" % (where, theirs, self.cluster_id))

    def _read_configmaps(self):
        try:
            items = self.client.list("v1", "configmaps", namespace=self.namespace,
                                     label_selector="%s=%s" % (RECORD_LABEL, label_value(self.name)))
        except ClientError as exc:
            if exc.status == 404:
                return []
            raise RecordStoreError("cannot read the record ConfigMaps in namespace %s: %s"
                                   % (self.namespace, exc))
        out = []
        for cm in items:
            text = (cm.get("data") or {}).get(DATA_KEY)
            meta = cm.get("metadata") or {}
            try:
                doc = json.loads(text) if text else None
            except ValueError:
                raise RecordStoreError("ConfigMap %s/%s: %s is not valid JSON"
                                       % (self.namespace, meta.get("name"), DATA_KEY))
            if not isinstance(doc, dict) or doc.get("record") != self.name:
                continue
            index = int(doc.get("chunk") or 0)
            if meta.get("name") != self.chunk_name(index):
                continue
            out.append((index, meta.get("resourceVersion"), text, doc))
        return out

    def _read_file(self):
        try:
            with open(self.path, "r") as handle:
                text = handle.read()
        except IOError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR):  # none, or unusable: check_location says
                return None, None
            raise RecordStoreError("cannot read the record file %s: %s" % (self.path, exc))
        try:
            doc = json.loads(text)
        except ValueError:
            raise RecordStoreError("the record file %s is not valid JSON" % self.path)
        if not isinstance(doc, dict) or doc.get("record") != self.name:
            raise RecordStoreError("the file %s does not hold the record %r" % (self.path, self.name))
        return text, doc

    def load(self):
        """Read both copies and merge them; return the entries (key -> entry)."""
        self.entries = {}
        self._chunk_of = {}
        self._chunks = {}
        meta = {}
        chunks = self._read_configmaps()
        for index, rv, text, doc in sorted(chunks, key=lambda c: c[0]):
            self._check_cluster(doc, "ConfigMap %s/%s" % (self.namespace, self.chunk_name(index)))
            self._chunks[index] = {"rv": rv, "text": text}
            if index == 0:
                meta.update(doc.get("meta") or {})
            self._merge_in(doc.get("entries"), chunk=index)
        text, doc = self._read_file()
        self._file_text = text
        if doc is not None:
            self._check_cluster(doc, "the record file %s" % self.path)
            for key, value in (doc.get("meta") or {}).items():
                meta.setdefault(key, value)
            self._merge_in(doc.get("entries"))
        self.loaded_from = {"configmaps": len(chunks), "file": doc is not None}
        self.meta = meta
        return self.entries

    # -- before the first write ----------------------------------------------------------------------

    def check_location(self, variable_prefix=None, path_given=True):
        """Prove, writing nothing, that both copies can be written where they were told: a server-side dry run of
        chunk 0's next write (a create when the record is new, else a replace at the resourceVersion read) and
        the file's path (records/location.py). Raises RecordStoreError naming each variable to fix."""
        names = variable_names(variable_prefix)
        known = self._chunks.get(0)
        text = known["text"] if known else self._chunk_text(0, [])
        body = self._configmap(0, text, known["rv"] if known else None)
        require_usable([check_configmap(self.client, body, how="replace" if known else "create", names=names),
                        check_file(self.path, names=names, given=path_given)], error=RecordStoreError)

    # -- saving --------------------------------------------------------------------------------------

    def _item(self, key):
        """``"key":{entry}``, the entry's member of an "entries" object (cached while the entry is the same)."""
        entry = self.entries[key]
        cached = self._texts.get(key)
        if cached is not None and cached[0] is entry:
            return cached[1]
        text = json.dumps(key) + ":" + _dumps(entry)
        self._texts[key] = (entry, text)
        return text

    def _members(self, index, keys):
        """The members of chunk ``index`` holding ``keys`` (sorted), joined; built again only when one of its
        keys or entries changed since the last time."""
        keys = tuple(keys)
        cached = self._parts.get(index)
        if cached is not None and cached[0] == keys and all(
                self.entries[k] is e for k, e in zip(keys, cached[1])):
            return cached[2]
        text = ",".join(self._item(k) for k in keys)
        self._parts[index] = (keys, tuple(self.entries[k] for k in keys), text)
        return text

    def _layout(self):
        """chunk index -> sorted keys. Known keys stay in their chunk, new ones go to the last chunk, and
        a chunk over the size limit passes its last keys on to the next one (entries only move up). New keys
        fill a chunk to ``CHUNK_FILL`` of the limit only (the rest passed on), so that their growth when marked
        done does not push entries from chunk to chunk."""
        if not self.entries:
            return {}
        last = max(self._chunk_of.values()) if self._chunk_of else 0
        layout = {}
        for key in sorted(self.entries):
            layout.setdefault(self._chunk_of.get(key, last), []).append(key)

        def size(key):
            return len(self._item(key)) + 1
        budget = self.chunk_bytes - 1024  # the wrapper document, metadata
        fill = int(budget * CHUNK_FILL)
        index = 0
        while index <= max(layout):
            keys = layout.get(index, [])
            total = len(self._members(index, keys)) + 1 if keys else 0  # the sum of size(k) over the keys
            moved = []
            if total > fill and any(k not in self._chunk_of for k in keys):
                # the known keys stay; new ones, in order, while they fit under the fill mark (at least one key)
                kept, total = [], sum(size(k) for k in keys if k in self._chunk_of)
                for key in keys:
                    if key in self._chunk_of:
                        kept.append(key)
                    elif not kept or total + size(key) <= fill:
                        kept.append(key)
                        total += size(key)
                    else:
                        moved.append(key)
                keys = kept
            while len(keys) > 1 and total > budget:
                key = keys.pop()
                total -= size(key)
                moved.insert(0, key)
            if moved:
                layout[index + 1] = sorted(moved + layout.get(index + 1, []))
            layout[index] = keys
            index += 1
        return layout

    def _chunk_text(self, index, keys):
        """The JSON of chunk ``index`` holding the entries ``keys`` (redacted, keys sorted, compact)."""
        doc = {"format": FORMAT, "record": self.name, "job": self.job, "chunk": index}
        if self.cluster_id:
            doc["cluster"] = self.cluster_id
        if index == 0:
            doc["meta"] = self.meta
        return _dumps_around(doc, "{" + self._members(index, keys) + "}")

    def _configmap(self, index, text, rv=None):
        labels = dict(MANAGED_BY)
        labels[RECORD_LABEL] = label_value(self.name)
        metadata = {"name": self.chunk_name(index), "namespace": self.namespace, "labels": labels,
                    "annotations": {"lifecycle.calico-ops.io/job": self.job}}
        if rv:
            metadata["resourceVersion"] = rv
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {DATA_KEY: text}}

    def _refresh_after_conflict(self):
        """Someone else wrote the record: merge their copy into ours (more advanced wins) and go again."""
        mine = self.entries
        self.entries = {}
        self._chunk_of = {}
        self._chunks = {}
        for index, rv, text, doc in sorted(self._read_configmaps(), key=lambda c: c[0]):
            self._chunks[index] = {"rv": rv, "text": text}
            self._merge_in(doc.get("entries"), chunk=index)
        self._merge_in(mine)

    def _save_configmaps(self):
        for _attempt in range(SAVE_RETRIES):
            layout = self._layout()
            try:
                for index in sorted(layout, reverse=True):
                    keys = layout[index]
                    known = self._chunks.get(index)
                    if not keys and known is None:
                        continue
                    text = self._chunk_text(index, keys)
                    if known is not None and known["text"] == text:
                        continue
                    if known is None:
                        result = self.client.create("v1", "configmaps", self._configmap(index, text),
                                                    namespace=self.namespace)
                    else:
                        result = self.client.replace("v1", "configmaps",
                                                     self._configmap(index, text, known["rv"]),
                                                     namespace=self.namespace)
                    self._chunks[index] = {"rv": ((result or {}).get("metadata") or {}).get("resourceVersion"),
                                           "text": text}
                    for key in keys:
                        self._chunk_of[key] = index
                return
            except ClientError as exc:
                if exc.status != 409:
                    raise RecordStoreError("cannot write the record ConfigMap in namespace %s: %s"
                                           % (self.namespace, exc))
                self._refresh_after_conflict()
        raise RecordStoreError("the record ConfigMaps %s/%s kept changing under us (%d conflicts)"
                               % (self.namespace, self.name, SAVE_RETRIES))

    def _save_file(self):
        doc = {"format": FORMAT, "record": self.name, "job": self.job, "meta": self.meta}
        if self.cluster_id:
            doc["cluster"] = self.cluster_id
        # redacted as the ConfigMaps are (a record never holds a Secret's values); compact, one line: the file is
        # rewritten at every checkpoint, and an indented dump of a large record costs seconds each time
        text = _dumps_around(doc, "{" + ",".join(self._item(k) for k in sorted(self.entries)) + "}")
        if text == self._file_text:
            return
        atomic_write(self.path, text)
        self._file_text = text

    def save(self):
        """Persist the entries: ConfigMaps first, then the file. Raises RecordStoreError."""
        if getattr(self.client, "check_mode", False):
            raise RecordStoreError("check mode: the record is not written")
        self.meta.setdefault("created", utc_now())
        self._save_configmaps()
        try:
            self._save_file()
        except (IOError, OSError) as exc:
            raise RecordStoreError("cannot write the record file %s: %s" % (self.path, exc))
