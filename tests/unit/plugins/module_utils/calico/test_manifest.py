"""calico/manifest.py, editing custom-resources.yaml: only the Installation changes, every other document keeps its
text."""

import pytest
import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import manifest

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_releases import release_text


CR = """# header comment
apiVersion: operator.tigera.io/v1
kind: Installation
metadata:
  name: default
spec:
  # Configures Calico networking.
  calicoNetwork:
    hostPorts: Enabled
    ipPools:
      - name: default-ipv4-ippool
        cidr: 192.168.0.0/16

---
# This section configures the Calico API server.
apiVersion: operator.tigera.io/v1
kind: APIServer
metadata:
  name: default
spec: {}
---
apiVersion: operator.tigera.io/v1
kind: Goldmane
metadata:
  name: default
"""


def test_bpf_and_variant_are_set_and_other_documents_keep_their_text():
    text, docs, inst = manifest.render_custom_resources(CR, "BPF", "TigeraSecureEnterprise")
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    assert inst["spec"]["variant"] == "TigeraSecureEnterprise"
    assert "flexVolumePath" not in inst["spec"]
    assert inst["spec"]["calicoNetwork"]["ipPools"][0]["cidr"] == "192.168.0.0/16"
    assert [d["kind"] for d in docs] == ["Installation", "APIServer", "Goldmane"]
    assert "# This section configures the Calico API server.\napiVersion: operator.tigera.io/v1\nkind: APIServer" in text
    assert list(yaml.safe_load_all(text))[1] == yaml.safe_load(CR.split("---")[1])


def test_flex_volume_path_only_when_given():
    inst = manifest.render_custom_resources(CR, "BPF", flex_volume_path="/var/lib/kubelet/plugins")[2]
    assert inst["spec"]["flexVolumePath"] == "/var/lib/kubelet/plugins"


def test_user_overrides_merge_last_and_null_removes():
    overrides = {"calicoNetwork": {"hostPorts": None, "bgp": "Disabled"}, "registry": "r.example/"}
    inst = manifest.render_custom_resources(CR, "BPF", spec_overrides=overrides)[2]
    net = inst["spec"]["calicoNetwork"]
    assert "hostPorts" not in net and net["bgp"] == "Disabled" and net["linuxDataplane"] == "BPF"
    assert inst["spec"]["registry"] == "r.example/"


def test_override_can_even_replace_the_dataplane():
    inst = manifest.render_custom_resources(CR, "BPF", spec_overrides={"calicoNetwork": {"linuxDataplane": "Iptables"}})[2]
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables"


def test_excluded_kinds_stay_in_the_artifact_but_are_not_created():
    text, docs = manifest.render_custom_resources(CR, "BPF", exclude_kinds=["Goldmane"])[:2]
    assert [d["kind"] for d in docs] == ["Installation", "APIServer"]
    assert "kind: Goldmane" in text


def test_rendering_is_stable():
    first = manifest.render_custom_resources(CR, "BPF", "Calico")[0]
    second = manifest.render_custom_resources(first, "BPF", "Calico")[0]
    assert first == second


@pytest.mark.parametrize("bad,message", [
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no Installation"),
    (CR + "---\n" + CR.split("---", maxsplit=1)[0], "2 Installation documents"),
    ("a: [unclosed\n", "not valid YAML"),
])
def test_bad_manifests_are_refused(bad, message):
    with pytest.raises(manifest.ManifestError, match=message):
        manifest.render_custom_resources(bad, "BPF")


def test_the_released_file_edits_cleanly():
    text = release_text("v3.31.4", "custom-resources.yaml")
    edited, docs, inst = manifest.render_custom_resources(text, "BPF", "Calico")
    assert [d["kind"] for d in docs] == ["Installation", "APIServer", "Goldmane", "Whisker"]
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    original_tail = text.split("kind: APIServer")[1]
    assert edited.endswith(original_tail)


def test_deep_merge_does_not_touch_its_inputs():
    base = {"a": {"b": 1}}
    out = manifest.deep_merge(base, {"a": {"c": 2}})
    assert base == {"a": {"b": 1}} and out == {"a": {"b": 1, "c": 2}}


def test_invalid_yaml_is_a_manifest_error():
    """k8s/yaml_text's YAML error is the one the callers catch: here it becomes the manifest's error."""
    with pytest.raises(manifest.ManifestError, match="not valid YAML"):
        manifest.load_documents("a: [1, 2\n")
    with pytest.raises(manifest.ManifestError, match="not valid YAML"):
        manifest.parse_segment("a: {b\n")
