"""records/location.py and the record store's proof of its location before the first write (issue 36): the
ConfigMap by a server-side dry run of the write, the file by what the file system says, nothing written either way,
and each failure naming the variable to fix."""

from __future__ import absolute_import, division, print_function

import os
import re

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records import location
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.files import RecordStoreError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.location import check_record_location
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import open_record_store

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import _error, standard_api


class Refusing(object):
    """A transport in front of the fake API that answers every ConfigMap write with ``status``."""

    def __init__(self, dyn, status, reason):
        self.dyn, self.status, self.reason = dyn, status, reason

    def request(self, method, path, body=None, **params):
        if method != "GET" and "/configmaps" in path:
            self.dyn.log.append((method, path, dict(params.get("query_params") or [])))
            raise _error(self.status, self.reason, "configmaps is %s" % self.reason.lower())
        return self.dyn.request(method, path, body=body, **params)


def test_variable_names_of_a_module_and_of_a_role():
    assert location.variable_names() == {"namespace": "record_namespace", "name": "record_name",
                                         "path": "record_path"}
    assert location.variable_names("owner_references_")["namespace"] == "owner_references_record_namespace"


@pytest.mark.parametrize("status, reason, needle", [
    (404, "Not Found", r"owner_references_record_namespace: the record namespace 'kube-system' does not exist"),
    (403, "Forbidden", r"owner_references_record_namespace: the job's identity may not write the record ConfigMap"),
    (422, "Unprocessable Entity", r"owner_references_record_name: 'rec' is not a valid ConfigMap name"),
])
def test_a_refused_dry_run_fails_the_open_naming_the_variable_and_writes_nothing(tmp_path, status, reason, needle):
    dyn = standard_api()
    client = Client(Refusing(dyn, status, reason))
    with pytest.raises(RecordStoreError) as err:
        open_record_store(client, "kube-system", "rec", str(tmp_path / "rec.json"), "job",
                          variable_prefix="owner_references_")
    assert re.match(needle, str(err.value)), str(err.value)
    assert str(err.value).endswith("nothing was written")
    assert [e for e in dyn.log if e[0] != "GET"] == [("POST", "/api/v1/namespaces/kube-system/configmaps",
                                                      {"fieldManager": "calico-ops", "dryRun": "All"})]
    assert not os.path.exists(str(tmp_path / "rec.json"))


def test_an_existing_record_is_proven_by_a_dry_run_replace_at_its_resource_version(tmp_path):
    dyn = standard_api()
    client = Client(dyn)
    store = open_record_store(client, "kube-system", "rec", str(tmp_path / "rec.json"), "job")
    store.add("a", {"x": 1})
    store.save()
    rv = dyn.obj("v1", "configmaps", "rec", namespace="kube-system")["metadata"]["resourceVersion"]
    mark = len(dyn.log)
    open_record_store(client, "kube-system", "rec", str(tmp_path / "rec.json"), "job")
    dry = [e for e in dyn.log[mark:] if e[0] != "GET"]
    assert dry == [("PUT", "/api/v1/namespaces/kube-system/configmaps/rec",
                    {"fieldManager": "calico-ops", "dryRun": "All"})]
    assert dyn.writes()[-1][0] == "POST" and len(dyn.writes()) == 1  # the save; the proof wrote nothing
    assert dyn.obj("v1", "configmaps", "rec", namespace="kube-system")["metadata"]["resourceVersion"] == rv


def test_check_mode_proves_the_location_too():
    dyn = standard_api()
    client = Client(Refusing(dyn, 404, "Not Found"), check_mode=True)
    with pytest.raises(RecordStoreError, match="record_namespace: the record namespace"):
        check_record_location(client, "kube-system", "rec", how="apply")


def test_unusable_record_files_are_named_and_nothing_is_created(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    names = location.variable_names("host_endpoint_migration_")
    under_a_file = str(a_file / "sub" / "rec.json")
    assert location.check_file(under_a_file, names) == (
        "host_endpoint_migration_record_path: the record file %s cannot be created: %s is not a directory"
        % (under_a_file, a_file))
    assert "is a directory, not a file" in location.check_file(str(tmp_path), names)
    assert "(the default path; set host_endpoint_migration_record_path to another)" in location.check_file(
        str(tmp_path), names, given=False)
    fine = tmp_path / "new" / "deeper" / "rec.json"
    assert location.check_file(str(fine), names) is None
    assert not (tmp_path / "new").exists()  # the check creates nothing, not even the directory


def test_a_file_and_a_namespace_problem_are_both_reported(tmp_path):
    dyn = standard_api()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    client = Client(Refusing(dyn, 403, "Forbidden"))
    with pytest.raises(RecordStoreError) as err:
        open_record_store(client, "kube-system", "rec", str(a_file / "rec.json"), "job")
    assert "record_namespace: the job's identity may not write" in str(err.value)
    assert "; record_path: the record file" in str(err.value)


def test_check_record_location_for_a_store_record_reads_it_then_dry_runs_its_replace(tmp_path):
    dyn = standard_api()
    dyn.put("v1", "configmaps", {"metadata": {"name": "rec", "namespace": "kube-system"}, "data": {"a": "b"}})
    out = check_record_location(Client(dyn), "kube-system", "rec", how="store", keeps_file=True,
                                path=str(tmp_path / "r.json"), variable_prefix="upgrade_owner_references_")
    assert out == {"namespace": "kube-system", "name": "rec", "exists": True, "path": str(tmp_path / "r.json")}
    assert [e[0] for e in dyn.log if e[0] != "GET"] == ["PUT"] and dyn.writes() == []
