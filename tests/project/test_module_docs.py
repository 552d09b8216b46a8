"""The services_endpoint_info, kube_proxy_info and merge_patch modules: documentation matches the argument
spec, and no option shadows one of kubernetes.core's auth options (``host`` would become the API server URL).
Checks over several modules (tests/unit mirrors plugins/, one test file per source file)."""

import importlib

import pytest
import yaml
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import facts


MODULES = ("services_endpoint_info", "kube_proxy_info", "merge_patch")


def documentation(name):
    mod = importlib.import_module("ansible_collections.calico_ops.lifecycle.plugins.modules.%s" % name)
    return yaml.safe_load(mod.DOCUMENTATION)


@pytest.mark.parametrize("name", MODULES)
def test_no_option_shadows_an_auth_option(name):
    assert set(documentation(name)["options"]) & set(AUTH_ARG_SPEC) == set()


@pytest.mark.parametrize("name", MODULES)
def test_documentation_basics(name):
    doc = documentation(name)
    assert doc["module"] == name
    assert doc["author"] == ["calico_ops maintainers (@calico-ops)"]
    assert "kubernetes.core.k8s_auth_options" in doc["extends_documentation_fragment"]
    for attr in ("check_mode", "diff_mode"):
        assert doc["attributes"][attr]["description"]


def test_platform_choices_in_the_modules():
    for name in ("services_endpoint_info", "kube_proxy_info"):
        assert tuple(documentation(name)["options"]["platform"]["choices"]) == facts.SUPPORTED_CHOICES
