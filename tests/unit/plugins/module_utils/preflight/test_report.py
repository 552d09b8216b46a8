"""preflight/report.py: the API and host results merged, and the report rendered as a table and as Markdown."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import report as preflight_report
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.runner import run_preflight

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.preflight_cluster import add_node, api


def test_report_merges_hosts_and_renders():
    dyn = api()
    add_node(dyn, "node-1")
    cluster = run_preflight(client(dyn))
    cluster.update(changed=False, invocation={"module_args": {}})
    host_ok = {"ansible_loop_var": "_preflight_host", "_preflight_host": "h1", "verdict": "ok",
               "checks": {"bpffs": {"verdict": "ok", "reason": "bpffs mounted at /sys/fs/bpf"}},
               "facts": {"os_image": "Ubuntu 22.04.4 LTS"}}
    host_down = {"ansible_loop_var": "_preflight_host", "_preflight_host": "h2", "unreachable": True,
                 "msg": "ssh: connect to host h2 port 22: Connection refused"}
    report = preflight_report.merge(cluster, [host_ok, host_down], [])
    assert "invocation" not in report and "changed" not in report
    assert report["hosts"]["h1"]["verdict"] == "ok"
    assert report["hosts"]["h2"]["checks"]["host_facts"]["verdict"] == "fail"
    assert report["eligible"] is False
    assert report["summary"]["failing"] == [
        "host h2: host_facts: unreachable: ssh: connect to host h2 port 22: Connection refused"]
    ignored = preflight_report.merge(cluster, [host_down], ["host_facts"])
    assert ignored["eligible"] is True
    md = preflight_report.to_markdown(report)
    assert md.startswith("# Calico eBPF preflight: NOT eligible")
    assert "| h2 | fail |" in md and "| node-1 | ok |" in md
    lines = preflight_report.table_lines(report)
    assert lines[0].startswith("eBPF preflight: NOT ELIGIBLE (fail)")
    assert any(line.startswith("host_facts") and "host h2: unreachable" in line for line in lines)


def test_the_merged_report_shares_nothing_with_the_registered_result():
    """merge copies the API result (as plain dicts and lists, not a deep copy of Ansible's lazy containers): a
    later change to the report leaves the registered result as it was, and tuples come out as lists."""
    dyn = api()
    add_node(dyn, "node-1")
    cluster = run_preflight(client(dyn))
    cluster["ignored"] = ("host_facts",)
    before = {k: repr(v) for k, v in cluster.items()}
    report = preflight_report.merge(cluster, [], None)
    report["nodes"]["node-1"]["checks"].clear()
    report["checks"].clear()
    assert {k: repr(v) for k, v in cluster.items()} == before
    assert report["ignored"] == ["host_facts"]
