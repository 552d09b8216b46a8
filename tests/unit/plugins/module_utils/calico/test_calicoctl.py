"""calico/calicoctl.py: calicoctl's own rules for where its settings come from (libcalico-go apiconfig, calicoctl
clientmgr), and a calicoctl without etcd settings refused instead of falling back to the Kubernetes datastore
(issue 36)."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import calicoctl


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
