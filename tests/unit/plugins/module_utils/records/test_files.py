"""records/files.py: the file copy of a record, written atomically (0600, never half written), its default path,
and ``find_records``, which says where a job's records are when they are not where the user said."""

import json
import os

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records import files

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client, standard_api


def test_atomic_write_keeps_the_old_file_when_replacing_fails(tmp_path, monkeypatch):
    path = str(tmp_path / "sub" / "f.json")
    files.atomic_write(path, '{"v": 1}')
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"

    def broken_replace(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError):
        files.atomic_write(path, '{"v": 2}')
    with open(path) as f:
        assert json.load(f) == {"v": 1}
    assert os.listdir(str(tmp_path / "sub")) == ["f.json"]  # no temporary file left behind


def test_atomic_write_makes_a_private_directory_and_takes_bytes(tmp_path):
    path = str(tmp_path / "new" / "deeper" / "r.json")
    files.atomic_write(path, b'{"v": 3}')
    assert oct(os.stat(str(tmp_path / "new" / "deeper")).st_mode & 0o777) == "0o700"
    with open(path, "rb") as f:
        assert f.read() == b'{"v": 3}'
    files.atomic_write(path, '{"v": 4}')
    assert os.listdir(str(tmp_path / "new" / "deeper")) == ["r.json"]


def test_default_record_path_names_the_job_and_the_cluster(monkeypatch):
    assert files.default_record_path("calico-ops-owner-references", "uid-1") == os.path.join(
        files.DEFAULT_RECORD_DIR, "calico-ops-owner-references-uid-1.json")
    assert files.default_record_path("rec", None) == os.path.join(files.DEFAULT_RECORD_DIR, "rec-cluster.json")
    monkeypatch.setattr(files, "DEFAULT_RECORD_DIR", "/elsewhere")
    assert files.default_record_path("rec", "c") == "/elsewhere/rec-c.json"


def record_doc(job="owner_references", record="rec", cluster="cluster-uid-1", chunk=0, done=(True, False, False)):
    return {"job": job, "record": record, "cluster": cluster, "chunk": chunk,
            "entries": dict(("k%d" % i, {"done": d}) for i, d in enumerate(done))}


def put_record_configmap(dyn, namespace, name, doc, labelled=True):
    meta = {"name": name, "namespace": namespace}
    if labelled:
        meta["labels"] = {files.RECORD_LABEL: "rec"}
    dyn.put("v1", "configmaps", {"metadata": meta, "data": {files.DATA_KEY: json.dumps(doc)}})


def test_find_records_in_configmaps_of_any_namespace_and_in_files(tmp_path):
    dyn = standard_api()
    put_record_configmap(dyn, "kube-system", "rec", record_doc())
    put_record_configmap(dyn, "ops", "rec-1", record_doc(chunk=1))  # a later chunk: chunk 0 stands for the record
    put_record_configmap(dyn, "ops", "other-job", record_doc(job="host_endpoint_migration"))
    put_record_configmap(dyn, "ops", "other-cluster", record_doc(cluster="cluster-uid-2"))
    put_record_configmap(dyn, "ops", "unlabelled", record_doc(), labelled=False)
    put_record_configmap(dyn, "ops", "broken", "not json")
    dyn.put("v1", "configmaps", {"metadata": {"name": "bad", "namespace": "ops", "labels": {files.RECORD_LABEL: "x"}},
                                 "data": {files.DATA_KEY: "{not json"}})
    (tmp_path / "rec-cluster-uid-1.json").write_text(json.dumps(record_doc(done=(True, True))))
    (tmp_path / "other.json").write_text(json.dumps(record_doc(job="host_endpoint_migration")))
    (tmp_path / "garbage.json").write_text("{")
    (tmp_path / "notes.txt").write_text(json.dumps(record_doc()))
    directories = [str(tmp_path), str(tmp_path / "missing"), str(tmp_path) + "/."]  # the same one twice: searched once
    found, unsearched = files.find_records(client(dyn), "owner_references", directories, cluster="cluster-uid-1")
    assert unsearched == []
    assert found == [
        {"where": "ConfigMap kube-system/rec", "kind": "ConfigMap", "namespace": "kube-system", "name": "rec",
         "path": None, "entries": 3, "pending": 2},
        {"where": "file %s" % (tmp_path / "rec-cluster-uid-1.json"), "kind": "file", "namespace": None, "name": "rec",
         "path": str(tmp_path / "rec-cluster-uid-1.json"), "entries": 2, "pending": 0}]
    assert [q["labelSelector"] for m, p, q in dyn.log if p == "/api/v1/configmaps"] == [files.RECORD_LABEL]
    assert dyn.writes() == []
    every_cluster = files.find_records(client(dyn), "owner_references", [])[0]
    assert sorted(f["where"] for f in every_cluster) == ["ConfigMap kube-system/rec", "ConfigMap ops/other-cluster"]


def test_find_records_says_what_it_could_not_search(tmp_path, monkeypatch):
    dyn = standard_api()
    dyn.list_failing["v1/configmaps"] = (403, "Forbidden")
    (tmp_path / "a.json").write_text(json.dumps(record_doc(record="first")))
    (tmp_path / "b.json").write_text(json.dumps(record_doc(record="second")))
    found, unsearched = files.find_records(client(dyn), "owner_references", [str(tmp_path)], max_files=1)
    assert unsearched == ["ConfigMaps of other namespaces (403)"]
    assert [f["name"] for f in found] == ["first"]  # at most max_files files of a directory, in name order
    plain = os.listdir

    def listdir(path):
        if path == str(tmp_path):
            raise OSError(13, "Permission denied")
        return plain(path)
    monkeypatch.setattr(files.os, "listdir", listdir)
    found, unsearched = files.find_records(client(standard_api()), "owner_references", [str(tmp_path)])
    assert found == [] and unsearched == ["directory %s ([Errno 13] Permission denied)" % tmp_path]
