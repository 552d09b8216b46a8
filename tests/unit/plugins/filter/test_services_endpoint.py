"""The services_endpoint role's filter (plugins/filter/services_endpoint.py): the report of
module_utils/services_endpoint/report.py."""

from pathlib import Path

from ansible_collections.calico_ops.lifecycle.plugins.filter.services_endpoint import FilterModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.services_endpoint import report

F = FilterModule().filters()
FILTERS = Path(__file__).resolve().parents[4] / "plugins" / "filter"


def test_the_filter_is_the_documented_one_and_the_rule():
    assert sorted(F) == ["services_endpoint_report"] and (FILTERS / "services_endpoint_report.yml").is_file()
    steps = {"info": {"platform": {"name": "eks"}}, "configmap": {"changed": False}}
    assert F["services_endpoint_report"](steps) == report.report(steps)
    assert F["services_endpoint_report"](steps)["platform"] == "eks"
