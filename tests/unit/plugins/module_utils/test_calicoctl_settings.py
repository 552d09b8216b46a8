# -*- coding: utf-8 -*-
"""calico/calicoctl.py and the etcd datastore's proof that calicoctl reaches etcd (issue 36): calicoctl's own rules
for where its settings come from (libcalico-go apiconfig, calicoctl clientmgr), a calicoctl without etcd settings
refused instead of falling back to the Kubernetes datastore, and a calicoctl that reads the Kubernetes API's
ClusterInformation refused before anything is written."""

from __future__ import absolute_import, division, print_function

import json

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import calicoctl
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.datastore import (
    CalicoctlDatastore, DatastoreError, make_datastore)

NAMES = {"datastore": "host_endpoint_migration_datastore", "config": "host_endpoint_migration_calicoctl_config"}
ETCD_CFG = ("apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\n"
            "spec:\n  datastoreType: etcdv3\n  etcdEndpoints: https://10.0.0.5:2379\n")
KDD_CFG = ("apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\n"
           "spec:\n  datastoreType: kubernetes\n  kubeconfig: /root/.kube/config\n")
UNTYPED_CFG = "apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec: {}\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_datastore_of_follows_calicoctls_defaults():
    assert calicoctl.datastore_of({"datastoreType": "etcdv3"}) == "etcdv3"
    assert calicoctl.datastore_of({"etcdEndpoints": "http://e:2379"}) == "etcdv3"
    assert calicoctl.datastore_of({}) == "kubernetes"  # no endpoints: calicoctl falls back to Kubernetes


def test_an_etcd_configuration_file_is_taken(tmp_path):
    cfg = write(tmp_path, "etcd.cfg", ETCD_CFG)
    out = calicoctl.etcd_settings(cfg, {}, NAMES, default_config="")
    assert out == {"source": "file", "config": cfg, "endpoints": "https://10.0.0.5:2379"}


@pytest.mark.parametrize("text, needle", [
    (KDD_CFG, "host_endpoint_migration_datastore is etcd but calicoctl's configuration %s is of the kubernetes "
              "datastore"),
    (UNTYPED_CFG, "host_endpoint_migration_datastore is etcd but calicoctl's configuration %s is of the kubernetes "
                  "datastore (datastoreType unset, no etcdEndpoints)"),
    ("kind: Other\n", "host_endpoint_migration_calicoctl_config: %s is not a calicoctl configuration"),
    ("a: [", "host_endpoint_migration_calicoctl_config: calicoctl's configuration %s is not valid YAML"),
])
def test_a_configuration_calicoctl_would_not_use_for_etcd_is_refused(tmp_path, text, needle):
    cfg = write(tmp_path, "c.cfg", text)
    with pytest.raises(calicoctl.CalicoctlConfigError) as err:
        calicoctl.etcd_settings(cfg, {"ETCD_ENDPOINTS": "http://e:2379"}, NAMES, default_config="")
    assert str(err.value).startswith(needle % cfg), str(err.value)


def test_no_configuration_and_no_endpoint_in_the_environment_is_refused(tmp_path):
    with pytest.raises(calicoctl.CalicoctlConfigError) as err:
        calicoctl.etcd_settings(None, {"DATASTORE_TYPE": "kubernetes"}, NAMES,
                                default_config=str(tmp_path / "absent.cfg"))
    assert "calicoctl has no etcd settings" in str(err.value)
    assert "it would fall back to the Kubernetes datastore" in str(err.value)
    assert "set host_endpoint_migration_calicoctl_config" in str(err.value)


def test_the_default_file_then_the_environment(tmp_path):
    default = write(tmp_path, "calicoctl.cfg", ETCD_CFG)
    assert calicoctl.etcd_settings(None, {}, NAMES, default_config=default)["source"] == "file"
    out = calicoctl.etcd_settings(None, {"CALICO_ETCD_ENDPOINTS": "http://e:2379"}, NAMES,
                                  default_config=str(tmp_path / "absent.cfg"))
    assert out == {"source": "environment", "config": None, "endpoints": "http://e:2379"}


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
