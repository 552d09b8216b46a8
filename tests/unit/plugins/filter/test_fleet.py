"""The fleet_rollout role's filter (plugins/filter/fleet.py): the plan of module_utils/fleet/plan.py."""

from pathlib import Path

from ansible_collections.calico_ops.lifecycle.plugins.filter.fleet import FilterModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.fleet import plan

F = FilterModule().filters()
FILTERS = Path(__file__).resolve().parents[4] / "plugins" / "filter"


def test_the_filter_is_the_documented_one_and_the_rule():
    assert sorted(F) == ["fleet_rollout_plan"] and (FILTERS / "fleet_rollout_plan.yml").is_file()
    settings = {"job": "upgrade", "group": "g", "connections": [("c1", "/k", "", {})], "batch": 1,
                "max_fail_percentage": 0, "gate_timeout": 1, "poll_interval": 1, "scope": "all"}
    assert F["fleet_rollout_plan"](settings) == plan.plan(settings)
    assert F["fleet_rollout_plan"](settings)["in_canary"] == ["c1"]
