"""The K8S_AUTH_* filters (plugins/filter/k8s_auth.py) wrap k8s/auth_settings.py; a bad setting is a filter error
that names the key, never the value."""

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.calico_ops.lifecycle.plugins.filter.k8s_auth import FilterModule

F = FilterModule().filters()
FILTERS = Path(__file__).resolve().parents[4] / "plugins" / "filter"


def test_the_filters_are_the_documented_ones():
    assert sorted(F) == ["k8s_auth_options", "k8s_auth_problems"]
    for name in F:
        assert yaml.safe_load((FILTERS / (name + ".yml")).read_text())["DOCUMENTATION"]["name"] == name


def test_options_and_problems():
    assert F["k8s_auth_options"]({"K8S_AUTH_HOST": "https://a", "K8S_AUTH_API_KEY": "t"}, "", "ctx") == {
        "host": "https://a", "api_key": "t", "context": "ctx"}
    assert F["k8s_auth_options"]({}) == {}
    assert F["k8s_auth_problems"]({"K8S_AUTH_USERNAME": "u"}, "c1: calico_k8s_auth")[0].startswith(
        "c1: calico_k8s_auth: K8S_AUTH_USERNAME not taken")
    assert F["k8s_auth_problems"]({"K8S_AUTH_HOST": "https://a"}) == []


def test_a_bad_setting_is_a_filter_error_without_its_value():
    with pytest.raises(AnsibleFilterError) as err:
        F["k8s_auth_options"]({"K8S_AUTH_PASSWORD": "s3cr3t-value"})
    assert "K8S_AUTH_PASSWORD" in str(err.value) and "s3cr3t-value" not in str(err.value)
