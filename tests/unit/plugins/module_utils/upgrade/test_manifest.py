"""upgrade/manifest.py, preparing an upgrade manifest: patches applied, etcd settings, byte-for-byte artifact."""

import base64

import pytest
import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import manifest as mf
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.upgrade import manifest as upgrade_manifest, patches as upgrade_patches

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_releases import release_text


def release(version, name):
    return release_text(version, name)


def by_kind(docs, kind, name):
    return [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name][0]


def calico_node(docs):
    ds = by_kind(docs, "DaemonSet", "calico-node")
    return [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "calico-node"][0]


def test_render_upgrade_applies_patches_and_keeps_other_documents_byte_for_byte():
    text = release("v3.31.4", "calico.yaml")
    patches = [
        {"kind": "DaemonSet", "name": "calico-node", "namespace": "kube-system",
         "patch": {"spec": {"template": {"spec": {"containers": [
             {"name": "calico-node", "env": [{"name": "CALICO_IPV4POOL_CIDR", "value": "10.10.0.0/16"}]}]}}}}},
        {"kind": "ConfigMap", "name": "calico-config",
         "json_patch": [{"op": "replace", "path": "/data/veth_mtu", "value": "1440"}]},
    ]
    artifact, docs, report = upgrade_manifest.render_upgrade(text, patches)
    env = dict((e["name"], e.get("value")) for e in calico_node(docs)["env"])
    assert env["CALICO_IPV4POOL_CIDR"] == "10.10.0.0/16" and env["DATASTORE_TYPE"] == "kubernetes"
    assert by_kind(docs, "ConfigMap", "calico-config")["data"]["veth_mtu"] == "1440"
    assert [r["matched"] for r in report] == [1, 1]
    assert [d for d in yaml.safe_load_all(artifact) if d] == docs
    original = mf.split_documents(text)
    kept = [seg for seg in mf.split_documents(artifact) if seg in original]
    assert len(kept) == len(original) - 2  # only the two patched documents were re-serialised


def test_render_upgrade_fails_when_a_patch_matches_nothing():
    text = release("v3.31.4", "calico.yaml")
    with pytest.raises(upgrade_patches.PatchError) as err:
        upgrade_manifest.render_upgrade(text, [{"kind": "DaemonSet", "name": "calico-node", "namespace": "calico-system",
                                                "patch": {"metadata": {"labels": {"a": "b"}}}}])
    assert "upgrade_manifest_patches[0]" in str(err.value) and "matches no document" in str(err.value)
    with pytest.raises(upgrade_patches.PatchError) as err:
        upgrade_manifest.render_upgrade(text, [{"kind": "ConfigMap", "name": "calico-config",
                                                "json_patch": [{"op": "replace", "path": "/data/nope", "value": "1"}]}])
    assert "/data/nope" in str(err.value)


@pytest.mark.parametrize("entry, words", [
    ({"kind": "DaemonSet", "name": "x"}, "exactly one of patch"),
    ({"kind": "DaemonSet", "name": "x", "patch": {}, "json_patch": []}, "exactly one of patch"),
    ({"name": "x", "patch": {}}, "needs kind and name"),
    ({"kind": "DaemonSet", "name": "x", "patch": [], "typo": 1}, "unknown keys: typo"),
    ("just a string", "must be a dict")])
def test_malformed_patches_are_refused(entry, words):
    with pytest.raises(upgrade_patches.PatchError) as err:
        upgrade_manifest.render_upgrade("kind: ConfigMap\n", [entry])
    assert words in str(err.value)


def test_etcd_endpoints_and_tls_go_into_the_configmap_and_the_secret_redacted_in_the_artifact():
    text = release("v3.31.4", "calico-etcd.yaml")
    tls = {"etcd_key": "KEY-PEM", "etcd_cert": "CERT-PEM", "etcd_ca": "CA-PEM"}
    artifact, docs, _report = upgrade_manifest.render_upgrade(text, (), ["https://10.0.0.1:2379", "https://10.0.0.2:2379"], tls)
    cm = by_kind(docs, "ConfigMap", "calico-config")["data"]
    assert cm["etcd_endpoints"] == "https://10.0.0.1:2379,https://10.0.0.2:2379"
    assert (cm["etcd_key"], cm["etcd_cert"], cm["etcd_ca"]) == (
        "/calico-secrets/etcd-key", "/calico-secrets/etcd-cert", "/calico-secrets/etcd-ca")
    secret = by_kind(docs, "Secret", "calico-etcd-secrets")["data"]
    assert base64.b64decode(secret["etcd-key"]) == b"KEY-PEM"
    assert "KEY-PEM" not in artifact and base64.b64encode(b"KEY-PEM").decode() not in artifact
    assert upgrade_manifest.REDACTED in artifact


def test_etcd_settings_need_an_etcd_manifest_and_key_with_cert():
    with pytest.raises(mf.ManifestError):
        upgrade_manifest.render_upgrade(release("v3.31.4", "calico.yaml"), (), ["http://127.0.0.1:2379"])
    with pytest.raises(mf.ManifestError):
        upgrade_manifest.render_upgrade(release("v3.31.4", "calico-etcd.yaml"), (), ["http://127.0.0.1:2379"], {"etcd_key": "k"})


def test_endpoints_only_leaves_the_tls_paths_empty():
    _artifact, docs, _report = upgrade_manifest.render_upgrade(release("v3.31.4", "canal-etcd.yaml"), (), ["http://127.0.0.1:2379"])
    cm = by_kind(docs, "ConfigMap", "canal-config")["data"]
    assert cm["etcd_endpoints"] == "http://127.0.0.1:2379" and cm["etcd_key"] == ""


def test_workloads():
    _artifact, docs, _report = upgrade_manifest.render_upgrade(release("v3.31.4", "calico-typha.yaml"))
    assert upgrade_manifest.workloads(docs) == {
        "daemonsets": [{"namespace": "kube-system", "name": "calico-node"}],
        "deployments": [{"namespace": "kube-system", "name": "calico-kube-controllers"},
                        {"namespace": "kube-system", "name": "calico-typha"}]}


def live_etcd(endpoints="https://10.0.0.9:2379", paths=True, keys=("etcd-ca", "etcd-cert", "etcd-key"), name="calico-config"):
    data = {"etcd_endpoints": endpoints, "etcd_ca": "", "etcd_cert": "", "etcd_key": ""}
    if paths:
        data.update(etcd_ca="/calico-secrets/etcd-ca", etcd_cert="/calico-secrets/etcd-cert",
                    etcd_key="/calico-secrets/etcd-key")
    return {"configmap": {"namespace": "kube-system", "name": name, "data": data},
            "secret": {"namespace": "kube-system", "name": "calico-etcd-secrets", "exists": keys is not None,
                       "keys": list(keys or [])}}


def test_live_etcd_settings_are_carried_and_the_live_secret_kept_when_not_given():
    notes = []
    artifact, docs, _report = upgrade_manifest.render_upgrade(release("v3.31.4", "calico-etcd.yaml"), (), [], {},
                                                              etcd_live=live_etcd(), etcd_notes=notes)
    cm = by_kind(docs, "ConfigMap", "calico-config")["data"]
    assert cm["etcd_endpoints"] == "https://10.0.0.9:2379"
    assert (cm["etcd_key"], cm["etcd_cert"], cm["etcd_ca"]) == (
        "/calico-secrets/etcd-key", "/calico-secrets/etcd-cert", "/calico-secrets/etcd-ca")
    assert not [d for d in docs if d["kind"] == "Secret"]  # the live Secret stays as it is
    assert "left out of the upgrade; the live Secret is kept as it is" in artifact
    assert any("etcd_endpoints kept from ConfigMap kube-system/calico-config" in n for n in notes)
    # the user's endpoints win; the TLS paths are still carried
    _a, docs, _r = upgrade_manifest.render_upgrade(release("v3.31.4", "calico-etcd.yaml"), (), ["http://1.2.3.4:2379"], {},
                                                   etcd_live=live_etcd())
    cm = by_kind(docs, "ConfigMap", "calico-config")["data"]
    assert cm["etcd_endpoints"] == "http://1.2.3.4:2379" and cm["etcd_ca"] == "/calico-secrets/etcd-ca"


def test_what_cannot_be_carried_is_refused_naming_the_variable():
    text = release("v3.31.4", "calico-etcd.yaml")
    with pytest.raises(mf.ManifestError, match="upgrade_etcd_endpoints is required .* only the placeholder"):
        upgrade_manifest.render_upgrade(text, (), [], {}, etcd_live=live_etcd(endpoints="http://<ETCD_IP>:<ETCD_PORT>"))
    on_disk = live_etcd(keys=("etcd-cert", "etcd-key"))
    on_disk["configmap"]["data"]["etcd_ca"] = "/etc/etcd/ca.pem"
    with pytest.raises(mf.ManifestError, match=r"sets etcd_ca to /etc/etcd/ca.pem but Secret kube-system/"
                                               r"calico-etcd-secrets has no etcd-ca.*give upgrade_etcd_ca"):
        upgrade_manifest.render_upgrade(text, (), [], {}, etcd_live=on_disk)
    # given material for the CA only: the live key and certificate would be dropped
    with pytest.raises(mf.ManifestError, match="has etcd-cert, etcd-key, which the new manifest would not carry"):
        upgrade_manifest.render_upgrade(text, (), [], {"etcd_ca": "CA-PEM"}, etcd_live=live_etcd())
    # a patch that empties a live TLS path is refused (never an empty TLS setting over a non-empty one)
    emptying = [{"kind": "ConfigMap", "name": "calico-config", "patch": {"data": {"etcd_ca": ""}}}]
    with pytest.raises(mf.ManifestError, match="etcd_ca would be emptied"):
        upgrade_manifest.render_upgrade(text, emptying, [], {}, etcd_live=live_etcd())


def test_all_material_given_replaces_the_live_settings():
    tls = {"etcd_key": "KEY-PEM", "etcd_cert": "CERT-PEM", "etcd_ca": "CA-PEM"}
    _a, docs, _r = upgrade_manifest.render_upgrade(release("v3.31.4", "canal-etcd.yaml"), (), [], tls,
                                                   etcd_live=live_etcd(name="canal-config"))
    secret = by_kind(docs, "Secret", "calico-etcd-secrets")["data"]
    assert base64.b64decode(secret["etcd-ca"]) == b"CA-PEM"
    assert by_kind(docs, "ConfigMap", "canal-config")["data"]["etcd_endpoints"] == "https://10.0.0.9:2379"


def test_a_user_patch_of_the_etcd_secret_is_applied_and_guarded():
    patch = [{"kind": "Secret", "name": "calico-etcd-secrets", "patch": {"metadata": {"labels": {"team": "net"}}}}]
    with pytest.raises(mf.ManifestError, match="key etcd-ca would be removed"):
        upgrade_manifest.render_upgrade(release("v3.31.4", "calico-etcd.yaml"), patch, [], {}, etcd_live=live_etcd())
    _a, docs, _r = upgrade_manifest.render_upgrade(release("v3.31.4", "calico-etcd.yaml"), patch, [], {},
                                                   etcd_live=live_etcd(paths=False, keys=()))
    assert by_kind(docs, "Secret", "calico-etcd-secrets")["metadata"]["labels"] == {"team": "net"}
