"""operator_migration/compare.py: the readers the operator migration's rules share (pure functions)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration import compare


def test_image_parts():
    assert compare.image_parts("quay.io/calico/node:v3.31.4") == ("quay.io/", "calico", "node", "v3.31.4")
    assert compare.image_parts("calico/node:v3.27.5@sha256:ab") == ("", "calico", "node", "v3.27.5")
    assert compare.image_parts("localhost:5000/node") == ("localhost:5000/", "", "node", None)


def test_normalise_drops_only_the_defaults_the_api_server_adds_where_it_adds_them():
    manifest = {"env": [{"name": "NODENAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "volumes": [{"name": "lib", "hostPath": {"path": "/lib/modules"}},
                            {"name": "cfg", "configMap": {"name": "calico-config"}}]}
    read_back = {"env": [{"name": "NODENAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}],
                 "volumes": [{"name": "lib", "hostPath": {"path": "/lib/modules", "type": ""}},
                             {"name": "cfg", "configMap": {"name": "calico-config", "defaultMode": 420}}]}
    assert compare.normalise(read_back) == manifest and compare.same(read_back, manifest)
    # the same key and value elsewhere is kept: it is not the server's default there
    assert compare.normalise({"metadata": {"type": "", "apiVersion": "v1"}}) == {"metadata": {"type": "", "apiVersion": "v1"}}
    assert not compare.same({"configMap": {"name": "a", "defaultMode": 384}}, {"configMap": {"name": "a"}})
    assert compare.same_env({"name": "A", "value": "1"}, {"value": "1", "name": "A"})
    assert not compare.same_env({"name": "A", "value": "1"}, {"name": "A", "value": "2"})


def test_parse_version_of_an_image_tag():
    assert compare.parse_version("v3.31.4") == (3, 31, 4)
    assert compare.parse_version("3.29.7-amd64") == (3, 29, 7)
    for text in ("v3.31", "latest", "", None, "v3.x.1"):
        assert compare.parse_version(text) is None


def test_calico_node_version_and_env_readers():
    cont = {"name": "calico-node", "image": "docker.io/calico/node:v3.29.7",
            "env": [{"name": "CALICO_NETWORKING_BACKEND", "value": "vxlan"}, {"name": "FELIX_LOGSEVERITYSCREEN"}]}
    ds = {"spec": {"template": {"metadata": {"annotations": {"a": "b"}},
                                "spec": {"containers": [{"name": "other", "image": "x:v1.0.0"}, cont]}}},
          "metadata": {"annotations": {"deprecated.daemonset.template.generation": "3"}}}
    assert compare.calico_node_version(ds) == "v3.29.7"
    assert compare.calico_node_version({"spec": {"template": {"spec": {"containers": []}}}}) is None
    assert compare.env_names(cont) == ["CALICO_NETWORKING_BACKEND", "FELIX_LOGSEVERITYSCREEN"]
    assert compare.env_entry(cont, "CALICO_NETWORKING_BACKEND") == {"name": "CALICO_NETWORKING_BACKEND", "value": "vxlan"}
    assert compare.env_entry(cont, "MISSING") is None and compare.env_names(None) == []
    assert compare.env_text(cont, "CALICO_NETWORKING_BACKEND", {}) == "vxlan"
    assert compare.annotations_of(ds) == {"deprecated.daemonset.template.generation": "3"}
    assert compare.template_annotations_of(ds) == {"a": "b"} and compare.template_annotations_of(None) == {}


def test_new_item_is_mapped_or_refused_with_its_fix():
    assert compare.new_item("calico-node env", "FELIX_X", "1", maps_to="FelixConfiguration") == {
        "where": "calico-node env", "name": "FELIX_X", "value": "1", "release_value": None,
        "maps_to": "FelixConfiguration"}
    assert compare.new_item("calico-node env", "X", "1", "0", refused="no operator field") == {
        "where": "calico-node env", "name": "X", "value": "1", "release_value": "0", "refused": "no operator field",
        "fix": ""}


def test_cni_json_reads_install_cnis_bare_placeholders_as_zero():
    cm = {"data": {"cni_network_config": '{"mtu": __CNI_MTU__, "nodename": "__KUBERNETES_NODE_NAME__", '
                                         '"plugins": [{"type": "calico"}]}'}}
    assert compare.cni_json(cm) == {"mtu": 0, "nodename": "__KUBERNETES_NODE_NAME__", "plugins": [{"type": "calico"}]}
    assert compare.cni_json(None) == {}
    with pytest.raises(ValueError):
        compare.cni_json({"data": {"cni_network_config": "{not json"}})
