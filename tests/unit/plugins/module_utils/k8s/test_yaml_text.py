"""k8s/yaml_text.py: release files read with PyYAML's C loader when it is there: the same objects as the pure-Python
safe loader, and a YAML error of either is the one the callers catch."""

import pytest
import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import yaml_text

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_releases import release_text


def test_the_c_loader_is_used_when_pyyaml_has_it():
    if getattr(yaml, "CSafeLoader", None) is None:
        assert yaml_text.SAFE_LOADER is yaml.SafeLoader
    else:
        assert yaml_text.SAFE_LOADER is yaml.CSafeLoader


@pytest.mark.parametrize("name", ["operator-crds.yaml", "tigera-operator.yaml", "custom-resources.yaml",
                                  "calico.yaml"])
def test_release_files_load_as_with_the_python_safe_loader(name):
    text = release_text("v3.31.4", name)
    docs = yaml_text.load_all(text)
    assert docs == list(yaml.safe_load_all(text))
    assert [d for d in docs if d] and all(isinstance(d, dict) for d in docs if d)


def test_values_yaml_1_1_resolves_alike():
    text = "a: yes\nb: 010\nc: 1e3\nd: '0x1'\ne: ~\nf: 2026-11-28\n"
    assert yaml_text.load(text) == yaml.safe_load(text)


def test_invalid_yaml_is_the_error_callers_catch():
    with pytest.raises(yaml_text.YAMLError):
        yaml_text.load_all("a: [1, 2\n")


def test_documents_of_a_manifest_option_are_the_same_from_text_a_list_or_one_dict():
    text = release_text("v3.31.4", "tigera-operator.yaml")
    docs = yaml_text.documents(text)
    assert docs == [d for d in yaml.safe_load_all(text) if d]
    assert yaml_text.documents(docs) == docs
    assert yaml_text.documents(docs[0]) == [docs[0]]
    assert yaml_text.documents("---\n---\nkind: A\n---\n") == [{"kind": "A"}]
    assert yaml_text.documents(None) == [] and yaml_text.documents([None, {}, {"kind": "B"}]) == [{"kind": "B"}]
