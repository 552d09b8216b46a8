"""host_endpoints/datastore.py: the etcd datastore through calicoctl (issue 36: a calicoctl that reads the Kubernetes
API's ClusterInformation refused before anything is written; its failures on one line, without local paths; its
writes refused in check mode), and the job run through it against a stand-in calicoctl
(``helpers/host_endpoints_world.py``)."""

from __future__ import absolute_import, division, print_function

import json

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import calicoctl
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import datastore as hem, rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.datastore import CalicoctlDatastore, DatastoreError, make_datastore
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.rules import HostEndpointMigrationError

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.host_endpoints_world import Etcd, hep, run_command


NAMES = {"datastore": "host_endpoint_migration_datastore", "config": "host_endpoint_migration_calicoctl_config"}
ETCD_CFG = ("apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\n"
            "spec:\n  datastoreType: etcdv3\n  etcdEndpoints: https://10.0.0.5:2379\n")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


class Calicoctl(object):
    """The command runner the module gives the datastore: answers calicoctl's reads, records each environment."""

    def __init__(self, guid):
        self.guid = guid
        self.calls = []

    def __call__(self, argv, data, timeout, environ_update):
        self.calls.append((argv, environ_update))
        if argv[1:4] == ["get", "clusterinformation", "default"]:
            return 0, json.dumps({"kind": "ClusterInformation", "spec": {"clusterGUID": self.guid}}), ""
        if argv[1:3] == ["get", "hostendpoints"]:
            return 0, json.dumps({"kind": "HostEndpointList", "items": []}), ""
        return 1, "", "unexpected"


class Api(object):
    """The Kubernetes API's ClusterInformation default (crd.projectcalico.org/v1)."""

    check_mode = False

    def __init__(self, guid):
        self.guid = guid

    def get(self, api_version, plural, name, namespace=None):
        assert (api_version, plural, name) == ("crd.projectcalico.org/v1", "clusterinformations", "default")
        return {"spec": {"clusterGUID": self.guid}} if self.guid else None


def test_a_calicoctl_that_reads_the_kubernetes_datastore_is_refused_before_any_write(tmp_path):
    cfg = write(tmp_path, "etcd.cfg", ETCD_CFG)
    run = Calicoctl("guid-of-kdd")
    ds = make_datastore(Api("guid-of-kdd"), {"datastore": "etcd", "calicoctl_path": "/x/calicoctl",
                                             "calicoctl_config": cfg, "variable_prefix": "host_endpoint_migration_"},
                        run=run)
    with pytest.raises(DatastoreError) as err:
        ds.resolve()
    assert str(err.value).startswith("host_endpoint_migration_datastore is etcd but calicoctl (/x/calicoctl) reaches "
                                     "the Kubernetes datastore")
    assert str(err.value).endswith("nothing was written")
    assert [argv[1] for argv, _env in run.calls] == ["get"]  # read only


def test_etcd_of_another_cluster_passes_and_every_call_names_the_datastore(tmp_path):
    cfg = write(tmp_path, "etcd.cfg", ETCD_CFG)
    run = Calicoctl("guid-of-etcd")
    ds = CalicoctlDatastore(path="/x/calicoctl", config=cfg, run=run, client=Api("guid-of-kdd"), environ={})
    assert ds.resolve() == "projectcalico.org/v3"
    assert ds.list_host_endpoints() == []
    assert all(env == {"DATASTORE_TYPE": "etcdv3", "CALICO_DATASTORE_TYPE": "etcdv3"} for _a, env in run.calls)
    assert ds.describe()["calicoctl_settings"] == "file"


def test_an_unconfigured_calicoctl_is_refused_before_it_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(calicoctl, "DEFAULT_CONFIG", str(tmp_path / "absent.cfg"))
    run = Calicoctl("guid")
    ds = CalicoctlDatastore(path="/x/calicoctl", config=None, run=run, client=Api("guid"), environ={},
                            names=NAMES)
    with pytest.raises(DatastoreError, match="calicoctl has no etcd settings"):
        ds.resolve()
    assert run.calls == []


def test_a_calicoctl_failure_is_one_line_without_its_configuration_path():
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.datastore import (
        CalicoctlDatastore, DatastoreError)

    def run(argv, data, timeout, environ_update):
        return 1, "", ("Failed to create Calico API client: open /etc/calico/etcd-key.pem: permission denied\n"
                       "Usage: calicoctl get ...")
    with pytest.raises(DatastoreError) as err:
        CalicoctlDatastore(config="/etc/calico/calicoctl.cfg", run=run).list_host_endpoints()
    assert str(err.value) == ("calicoctl get hostendpoints -o json failed (rc=1): Failed to create Calico API client: "
                              "open <path>: permission denied Usage: calicoctl get ...")


def test_etcd_through_calicoctl(tmp_path):
    e = Etcd(tmp_path)
    w = e.world
    res = w.runner(check_mode=True, datastore=e.datastore(check_mode=True)).run("migrated")
    assert res["changed"] is True and res["kube_controllers"]["action"] == "would patch"
    assert all(v[0] == "get" for v in e.verbs())
    assert w.dyn.writes() == []

    res = w.runner(datastore=e.datastore()).run("migrated")
    assert res["datastore"]["datastore"] == "etcd" and res["counts"]["deleted"] == 3
    state = e.load()
    assert sorted(state["heps"]) == ["n1-auto-hep", "n2-auto-hep", "n3-auto-hep", "n4-auto-hep"]
    assert state["kcc"]["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Enabled"
    assert all("--allow-version-mismatch" in c and "--config=%s" % e.config in c for c in state["calls"])
    assert set(state["datastore_types"]) == {"etcdv3"}  # every call told the datastore explicitly
    verbs = e.verbs()
    assert ["patch", "kubecontrollersconfiguration"] in verbs
    assert [v for v in verbs if v[0] == "delete"] == [["delete", "hostendpoint"]] * 3
    assert w.node_labels_now("n1")["role"] == "edge"  # labels go onto the Kubernetes nodes
    assert len(w.record()) == 3

    calls = len(e.load()["calls"])
    again = w.runner(datastore=e.datastore()).run("migrated")
    assert again["changed"] is False
    assert all(v[0] == "get" for v in e.verbs()[calls:])

    res = w.runner(datastore=e.datastore()).run("restored")
    assert res["counts"]["restored"] == 3
    state = e.load()
    for name, (node, labels) in w.old.items():
        assert state["heps"][name]["metadata"]["labels"] == labels
        assert "uid" in state["heps"][name]["metadata"] and state["heps"][name]["metadata"]["uid"] != "etcd-" + name


def test_etcd_missing_default_is_created_and_errors_are_reported(tmp_path):
    e = Etcd(tmp_path, kcc=None)
    w = e.world
    res = w.runner(datastore=e.datastore()).run("migrated")
    assert res["kube_controllers"]["action"] == "created"
    assert e.load()["kcc"]["spec"] == rules.KCC_DEFAULT_SPEC
    # calicoctl failing on its configuration: the module says what calicoctl said
    with open(e.config + ".other", "w") as f:
        f.write(open(e.config).read())
    bad = CalicoctlDatastore(path=e.path, config=e.config + ".other", run=run_command, environ={})
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner(datastore=bad).run("migrated")
    assert "calicoctl get hostendpoints -o json failed (rc=1): Failed to create Calico API client" in str(err.value)
    assert "\n" not in str(err.value) and str(tmp_path) not in str(err.value)  # one line, no local path
    missing = CalicoctlDatastore(path=str(tmp_path / "nowhere" / "calicoctl"), config=e.config, run=run_command,
                                 environ={})
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner(datastore=missing).run("migrated")
    assert "cannot run" in str(err.value)


def test_calicoctl_writes_are_refused_in_check_mode(tmp_path):
    e = Etcd(tmp_path)
    ds = e.datastore(check_mode=True)
    with pytest.raises(hem.ReadOnlyViolation):
        ds.delete_host_endpoint(hep("n1-hep", "n1"))
    assert e.verbs() == []
