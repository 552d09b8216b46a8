"""The preflight role's filters (plugins/filter/preflight.py): the API and host results merged, and the report
rendered, by module_utils/preflight/report.py (no logic in Jinja)."""

from pathlib import Path

from ansible_collections.calico_ops.lifecycle.plugins.filter.preflight import FilterModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import report as preflight_report
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.runner import run_preflight

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.preflight_cluster import add_node, api

F = FilterModule().filters()
FILTERS = Path(__file__).resolve().parents[4] / "plugins" / "filter"
HOST_DOWN = {"ansible_loop_var": "_preflight_host", "_preflight_host": "h2", "unreachable": True,
             "msg": "ssh: connect to host h2 port 22: Connection refused"}


def cluster_result():
    dyn = api()
    add_node(dyn, "node-1")
    result = run_preflight(client(dyn))
    result.update(changed=False)
    return result


def test_the_filters_are_the_documented_ones():
    assert sorted(F) == ["preflight_markdown", "preflight_report", "preflight_table"]
    assert all((FILTERS / (name + ".yml")).is_file() for name in F)


def test_preflight_report_merges_the_host_results_with_the_ignore_list():
    cluster = cluster_result()
    report = F["preflight_report"](cluster, [HOST_DOWN])
    assert report == preflight_report.merge(cluster, [HOST_DOWN], None)
    assert report["eligible"] is False and "changed" not in report
    assert F["preflight_report"](cluster, [HOST_DOWN], ["host_facts"])["eligible"] is True
    assert F["preflight_report"](cluster)["hosts"] == {}


def test_the_renderings_are_the_reports():
    report = F["preflight_report"](cluster_result(), [HOST_DOWN])
    assert F["preflight_markdown"](report) == preflight_report.to_markdown(report)
    assert F["preflight_markdown"](report).startswith("# Calico eBPF preflight: NOT eligible")
    assert F["preflight_table"](report) == preflight_report.table_lines(report, 100)
    assert F["preflight_table"](report, 60) == preflight_report.table_lines(report, 60)
    assert F["preflight_table"](report)[0].startswith("eBPF preflight: NOT ELIGIBLE")
