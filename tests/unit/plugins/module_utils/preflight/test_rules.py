"""preflight/rules.py: verdicts, ignore, the summary, and the check names the role and the module offer."""

from pathlib import Path

import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import facts
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.nodes import node_facts
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import cluster_rules, node_rules, rules as r

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.node_objects import node


REPO = Path(__file__).resolve().parents[5]


# -- ignore, summary, the check names ------------------------------------------------------------

def test_apply_ignore_downgrades_only_failures():
    checks = {"os_kernel": r.verdict("fail", "old"), "windows": r.verdict("ok", "Linux"),
              "platform": r.verdict("fail", "GKE")}
    r.apply_ignore(checks, ["os_kernel", "windows"])
    assert checks["os_kernel"] == {"verdict": "warn", "reason": "ignored by request: old", "ignored": True}
    assert checks["windows"] == {"verdict": "ok", "reason": "Linux"}
    assert checks["platform"]["verdict"] == "fail"


def test_summary_lists_every_failing_node_and_check():
    nodes = {}
    for name, kwargs in (("good", {}), ("rhel", {"os_image": "Red Hat Enterprise Linux 8.1 (Ootpa)",
                                                 "kernel": "4.18.0-147.el8.x86_64"}),
                         ("z", {"arch": "s390x"})):
        checks = node_rules.judge_node(node_facts(node(name, **kwargs)))
        nodes[name] = {"verdict": r.worst(checks.values()), "checks": checks}
    checks = {"sctp_services": cluster_rules.findings(["Service/a/b"], "SCTP", "none"),
              "platform": r.verdict("ok", "kubeadm")}
    s = r.summarise(nodes, checks)
    assert s["eligible"] is False and s["verdict"] == "fail"
    assert s["nodes"] == {"total": 3, "ok": 1, "warn": 0, "fail": 2}
    assert s["failing"] == [
        "node rhel: os_kernel: RHEL 8.1 is older than 8.2 (kernel 4.18.0-147.el8.x86_64)",
        "node z: architecture: s390x is not supported by the eBPF data plane (amd64 and arm64 only)",
        "sctp_services: SCTP: 1 (Service/a/b)",
    ]
    assert s["by_check"]["os_kernel"] == {"ok": 2, "warn": 0, "fail": 1}
    assert all(line in s["message"] for line in s["failing"])
    ok = r.summarise({"good": nodes["good"]}, {"platform": checks["platform"]})
    assert ok["eligible"] is True and ok["failing"] == []


def test_check_names_are_unique_and_cover_every_group():
    assert len(set(r.CHECK_NAMES)) == len(r.CHECK_NAMES)
    assert set(r.CHECK_NAMES) == set(r.NODE_CHECKS) | set(r.CLUSTER_CHECKS) | set(r.HOST_CHECKS)


def test_role_and_module_choices_are_the_known_check_names():
    """The role validates preflight_ignore against the names defined in preflight_rules (one list)."""
    spec = yaml.safe_load((REPO / "roles/preflight/meta/argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert options["preflight_ignore"]["choices"] == list(r.CHECK_NAMES)
    assert options["preflight_platform"]["choices"] == list(facts.PLATFORM_CHOICES)
    for module in ("ebpf_preflight_info", "ebpf_host_preflight_info"):
        text = (REPO / ("plugins/modules/%s.py" % module)).read_text()
        doc = yaml.safe_load(text.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
        assert doc["options"]["ignore"]["choices"] == list(r.CHECK_NAMES)
    doc = yaml.safe_load((REPO / "plugins/modules/ebpf_preflight_info.py").read_text()
                         .split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
    assert doc["options"]["platform"]["choices"] == list(facts.PLATFORM_CHOICES)
