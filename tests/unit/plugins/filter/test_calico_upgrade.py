"""The upgrade role's filters wrap the pure rules; errors surface as filter errors."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.calico_ops.lifecycle.plugins.filter.calico_upgrade import FilterModule

F = FilterModule().filters()


def facts(version, variant="Calico", source="image calico/node"):
    return {"facts": {"version": version, "variant": variant}, "sources": {"version": source}}


def test_plan_from_a_facts_result():
    plan = F["calico_upgrade_plan"](facts("v3.27.5"), "v3.31.4", {})
    assert plan["action"] == "upgrade" and plan["owner_references"] and "image calico/node" in plan["reason"]
    assert F["calico_upgrade_plan"](facts("v3.14.0"), "v3.31.4")["action"] == "refuse"
    assert F["calico_upgrade_plan"](facts("v3.31.4"), "v3.31.4", None)["action"] == "noop"


def test_plan_with_a_bad_target_is_a_filter_error():
    with pytest.raises(AnsibleFilterError) as err:
        F["calico_upgrade_plan"](facts("v3.27.5"), "3.31")
    assert "target version" in str(err.value)


def test_problem_filters():
    assert F["calico_version_problems"]({"upgrade_target_version": "v3.31.4.1"})[0].startswith("upgrade_target_version")
    assert F["calico_url_problems"]({"upgrade_manifest_url": "file:///x"})[0].startswith("upgrade_manifest_url")


def test_the_settings_filter_is_the_rules():
    from ansible_collections.calico_ops.lifecycle.plugins.filter.calico_upgrade import calico_upgrade_settings_problems
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.upgrade import settings
    bad = {"upgrade_target_version": "3.31", "upgrade_timeout": 0, "upgrade_poll_interval": 10}
    assert calico_upgrade_settings_problems(bad) == settings.problems(bad) and len(settings.problems(bad)) >= 2
