"""records/store.py, RecordStore: ConfigMaps (chunked, resourceVersion-guarded) + an atomic file, merged on load."""

import json
import os

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records import store as record_store
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.files import RECORD_LABEL
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import RecordStore, RecordStoreError, label_value, more_advanced

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client, standard_api


NS = "kube-system"


class Killed(BaseException):
    """The process dies here (not an error anyone catches)."""


def store(dyn, tmp_path, check_mode=False, **kw):
    kw.setdefault("cluster_id", "cluster-uid-1")
    return RecordStore(client(dyn, check_mode=check_mode), NS, "rec", str(tmp_path / "rec.json"), "test", **kw)


def record_configmaps(dyn):
    return sorted((k[1], v) for k, v in dyn.objects["/configmaps"].items()
                  if (v["metadata"].get("labels") or {}).get(RECORD_LABEL) == "rec")


def fill(s, n, size=0):
    for i in range(n):
        s.add("key-%04d" % i, {"n": i, "pad": "x" * size})


def test_save_writes_configmap_then_file_and_load_reads_them_back(tmp_path):
    dyn = standard_api()
    s = store(dyn, tmp_path)
    s.load()
    order = []
    dyn.before_write = lambda method, path, body: order.append((method, path, os.path.exists(s.path)))
    fill(s, 3)
    s.save()
    assert order == [("POST", "/api/v1/namespaces/kube-system/configmaps", False)]  # cluster copy first
    assert os.path.exists(s.path)
    (name, cm), = record_configmaps(dyn)
    assert name == "rec"
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "calico-ops"
    assert set(json.loads(cm["data"]["record.json"])["entries"]) == {"key-0000", "key-0001", "key-0002"}
    with open(s.path) as f:
        assert set(json.load(f)["entries"]) == {"key-0000", "key-0001", "key-0002"}

    again = store(dyn, tmp_path)
    assert set(again.load()) == {"key-0000", "key-0001", "key-0002"}
    assert again.loaded_from == {"configmaps": 1, "file": True}
    assert again.get("key-0001")["n"] == 1 and again.get("key-0001")["done"] is False


def test_saving_unchanged_entries_writes_nothing(tmp_path):
    dyn = standard_api()
    s = store(dyn, tmp_path)
    s.load()
    fill(s, 2)
    s.save()
    mtime = os.stat(s.path).st_mtime_ns
    writes = len(dyn.writes())
    again = store(dyn, tmp_path)
    again.load()
    again.save()
    assert len(dyn.writes()) == writes
    assert os.stat(s.path).st_mtime_ns == mtime


def test_add_keeps_an_existing_entry_and_update_raises_the_revision(tmp_path):
    s = store(standard_api(), tmp_path)
    s.load()
    assert s.add("a", {"v": 1}) is True
    assert s.add("a", {"v": 2}) is False
    assert s.get("a")["v"] == 1 and s.get("a")["revision"] == 1
    s.mark_done("a", outcome="ok")
    assert s.get("a")["done"] is True and s.get("a")["revision"] == 2 and s.get("a")["outcome"] == "ok"
    assert s.pending() == []


def test_large_record_is_chunked_and_each_chunk_stays_under_the_limit(tmp_path):
    dyn = standard_api()
    s = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    s.load()
    fill(s, 120, size=200)
    s.save()
    cms = record_configmaps(dyn)
    assert len(cms) >= 3
    assert [pair[0] for pair in cms] == sorted(["rec"] + ["rec-%d" % i for i in range(1, len(cms))])
    for _name, cm in cms:
        assert len(cm["data"]["record.json"]) <= 8 * 1024
    os.unlink(s.path)  # the cluster copy alone has everything
    again = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    assert len(again.load()) == 120
    assert again.loaded_from == {"configmaps": len(cms), "file": False}


def test_marking_entries_done_rewrites_only_their_chunk(tmp_path):
    dyn = standard_api()
    s = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    s.load()
    fill(s, 120, size=200)
    s.save()
    before = len(dyn.writes())
    s.mark_done("key-0119")
    s.save()
    written = [w[1] for w in dyn.writes()[before:]]
    assert len(written) == 1 and written[0].endswith("/configmaps/" + s.configmaps[-1])


def test_entries_growing_as_when_marked_done_rewrite_only_their_chunk(tmp_path):
    """New entries leave room in their chunk (CHUNK_FILL): the first chunk's entries growing by a quarter (an
    owner reference marked done: ~400 -> ~500 bytes) rewrite that chunk alone, not every chunk after it."""
    dyn = standard_api()
    s = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    s.load()
    fill(s, 120, size=200)
    s.save()
    assert len(s.configmaps) >= 4
    first = [k for k in sorted(s.entries) if s.chunk_of(k) == 0]
    before = len(dyn.writes())
    for key in first:
        s.mark_done(key, note="y" * 50)
    s.save()
    written = [w[1] for w in dyn.writes()[before:]]
    assert len(written) == 1 and written[0].endswith("/configmaps/" + s.configmaps[0]), written
    assert all(s.chunk_of(k) == 0 for k in first)
    assert len(store(dyn, tmp_path, chunk_bytes=8 * 1024).load()) == 120


def test_entries_only_move_up_and_a_crash_between_chunk_writes_loses_nothing(tmp_path):
    dyn = standard_api()
    s = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    s.load()
    fill(s, 60, size=200)
    s.save()
    chunks_before = len(s.configmaps)
    # grow every entry (threefold: beyond the room new entries leave, CHUNK_FILL): chunks overflow, entries pass
    # on to higher chunks; the process dies after one write
    for key in list(s.entries):
        s.update(key, note="y" * 400)
    calls = []

    def die_after_first_write(method, path, body):
        calls.append(path)
        if len(calls) == 2:
            raise Killed()
    dyn.before_write = die_after_first_write
    with pytest.raises(Killed):
        s.save()
    os.unlink(s.path)
    dyn.before_write = None
    again = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    assert len(again.load()) == 60  # written chunks + not yet rewritten ones still cover every entry
    again.save()
    assert len(again.configmaps) > chunks_before
    final = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    assert len(final.load()) == 60


def test_load_merges_both_copies_and_the_more_advanced_state_wins(tmp_path):
    dyn = standard_api()
    s = store(dyn, tmp_path)
    s.load()
    fill(s, 3)
    s.save()
    # the file moves on (entry 0 done, a new entry 9) while the cluster copy does not
    with open(s.path) as f:
        doc = json.load(f)
    doc["entries"]["key-0000"].update(done=True, revision=2)
    doc["entries"]["key-0009"] = {"n": 9, "done": False, "revision": 1}
    with open(s.path, "w") as f:
        json.dump(doc, f)
    # and the cluster copy moves on for entry 1
    cm = dyn.obj("v1", "configmaps", "rec", NS)
    cdoc = json.loads(cm["data"]["record.json"])
    cdoc["entries"]["key-0001"].update(done=True, revision=2)
    cm["data"]["record.json"] = json.dumps(cdoc)
    dyn.put("v1", "configmaps", cm)

    again = store(dyn, tmp_path)
    entries = again.load()
    assert sorted(entries) == ["key-0000", "key-0001", "key-0002", "key-0009"]
    assert entries["key-0000"]["done"] and entries["key-0001"]["done"] and not entries["key-0002"]["done"]
    again.save()  # both copies now hold the merged state
    assert len(store(dyn, tmp_path).load()) == 4
    os.unlink(again.path)
    assert store(dyn, tmp_path).load()["key-0000"]["done"] is True


def test_more_advanced():
    assert more_advanced({"done": False, "revision": 5}, {"done": True, "revision": 1})["done"] is True
    assert more_advanced({"done": True, "revision": 1}, {"done": False, "revision": 5})["done"] is True
    assert more_advanced({"revision": 1, "x": 1}, {"revision": 2, "x": 2})["x"] == 2
    assert more_advanced({"revision": 2, "x": 1}, {"revision": 2, "x": 2})["x"] == 1


def test_a_concurrent_writer_is_not_overwritten(tmp_path):
    dyn = standard_api()
    s = store(dyn, tmp_path)
    s.load()
    fill(s, 2)
    s.save()
    other = store(dyn, tmp_path)
    other.load()
    other.add("theirs", {"n": 100})
    other.mark_done("key-0000")
    other.save()
    # s still holds the old resourceVersion: its PUT gets 409, it re-reads, merges and writes again
    s.add("mine", {"n": 200})
    s.save()
    puts = [w for w in dyn.writes() if w[0] == "PUT"]
    assert len(puts) == 3  # other's PUT, s's refused PUT, s's PUT after the merge
    final = store(dyn, tmp_path)
    os.unlink(final.path)
    entries = final.load()
    assert set(entries) == {"key-0000", "key-0001", "theirs", "mine"}
    assert entries["key-0000"]["done"] is True


def test_check_mode_writes_nothing(tmp_path):
    dyn = standard_api()
    s = store(dyn, tmp_path, check_mode=True)
    s.load()
    fill(s, 2)
    with pytest.raises(RecordStoreError):
        s.save()
    assert dyn.writes() == []
    assert not os.path.exists(s.path)


def test_a_file_of_another_cluster_is_refused(tmp_path):
    dyn = standard_api()
    s = store(dyn, tmp_path)
    s.load()
    fill(s, 1)
    s.save()
    with pytest.raises(RecordStoreError, match="another cluster"):
        store(standard_api(), tmp_path, cluster_id="cluster-uid-2").load()


def test_missing_namespace_on_save_is_an_error(tmp_path):
    dyn = standard_api()

    def no_namespace(method, path, body):
        from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import _error
        raise _error(404, "Not Found", 'namespaces "nope" not found')
    s = RecordStore(client(dyn), "nope", "rec", str(tmp_path / "r.json"), "test")
    s.load()
    fill(s, 1)
    dyn.before_write = no_namespace
    with pytest.raises(RecordStoreError, match="cannot write the record ConfigMap"):
        s.save()
    assert not os.path.exists(s.path)


def test_label_value_is_valid_for_long_names():
    assert label_value("short") == "short"
    long_name = "a" * 70
    value = label_value(long_name)
    assert len(value) <= 63 and value != label_value("a" * 71)


def test_saved_texts_are_the_plain_redacted_json_of_the_whole_documents(tmp_path):
    """A chunk and the file are built from each entry's cached text; they are exactly the JSON (keys sorted,
    compact) of the redacted documents, secrets masked in them as before."""
    dyn = standard_api()
    s = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    s.load()
    fill(s, 60, size=150)
    secret = {"kind": "Secret", "metadata": {"name": "pull"}, "data": {".dockerconfigjson": "c2VjcmV0LXZhbHVl"}}
    s.add("key-secret", {"object": secret})
    s.meta["note"] = "meta\u0000with a NUL"
    s.save()
    layout = s._layout()
    for index, keys in layout.items():
        doc = {"format": record_store.FORMAT, "record": "rec", "job": "test", "chunk": index, "cluster": "cluster-uid-1",
               "entries": dict((k, s.get(k)) for k in keys)}
        if index == 0:
            doc["meta"] = s.meta
        assert s._chunks[index]["text"] == record_store._dumps(doc)
    with open(s.path) as f:
        text = f.read()
    assert text == record_store._dumps({"format": record_store.FORMAT, "record": "rec", "job": "test", "meta": s.meta,
                                        "cluster": "cluster-uid-1", "entries": s.entries})
    assert "c2VjcmV0LXZhbHVl" not in text and "c2VjcmV0LXZhbHVl" not in json.dumps(record_configmaps(dyn))
    assert json.loads(text)["entries"]["key-secret"]["object"]["data"][".dockerconfigjson"] == "<redacted>"


def test_a_checkpoint_serializes_only_the_entries_that_changed(tmp_path, monkeypatch):
    """The cost of saving a large record again is the changed entries (update and mark_done make new entry
    objects; an entry's cached text is reused only for the very object it was made from)."""
    dyn = standard_api()
    s = store(dyn, tmp_path)
    s.load()
    fill(s, 300)
    s.save()
    serialized = []
    real = record_store._dumps
    monkeypatch.setattr(record_store, "_dumps", lambda value: serialized.append(value) or real(value))
    s.mark_done("key-0007")
    s.update("key-0100", note="x")
    s.save()
    entry_dumps = [v for v in serialized if "n" in v]
    assert sorted(v["n"] for v in entry_dumps) == [7, 100]
    again = store(dyn, tmp_path)
    again.load()
    assert again.get("key-0007")["done"] is True and again.get("key-0100")["note"] == "x"
    with open(s.path) as f:
        assert json.load(f)["entries"]["key-0100"]["note"] == "x"


def test_a_checkpoint_joins_only_the_chunks_whose_entries_changed(tmp_path):
    """A chunk's members are joined again only when one of its entries changed (an attach's checkpoint changes one
    or two chunks of many); the texts saved are those built from scratch."""
    dyn = standard_api()
    s = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    s.load()
    fill(s, 120, size=200)
    s.save()
    assert len(s.configmaps) >= 3
    joined = dict((index, part[2]) for index, part in s._parts.items())
    first = s.configmaps[0]
    s.mark_done("key-0000")
    s.save()
    rebuilt = [index for index, part in s._parts.items() if part[2] is not joined.get(index)]
    assert rebuilt == [0], rebuilt
    fresh = store(dyn, tmp_path, chunk_bytes=8 * 1024)
    fresh.entries = dict(s.entries)
    fresh._chunk_of, fresh.meta = dict(s._chunk_of), s.meta
    layout = fresh._layout()
    assert [s._chunks[i]["text"] for i in sorted(layout)] == [fresh._chunk_text(i, layout[i]) for i in sorted(layout)]
    assert s.configmaps[0] == first and store(dyn, tmp_path, chunk_bytes=8 * 1024).load()["key-0000"]["done"] is True
