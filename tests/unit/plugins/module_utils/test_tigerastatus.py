"""Judging TigeraStatus conditions the way the operator writes them."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import tigerastatus as ts


def status(name, available, progressing, degraded, reason="", message=""):
    conds = []
    for ctype, value in (("Available", available), ("Progressing", progressing), ("Degraded", degraded)):
        cond = {"type": ctype, "status": value}
        if value == "True" and ctype != "Available" or (ctype == "Available" and value == "True"):
            cond.update(reason=reason, message=message)
        conds.append(cond)
    return {"metadata": {"name": name}, "status": {"conditions": conds}}


def test_available_component_is_ready():
    c = ts.summarize(status("calico", "True", "False", "False", "AllObjectsAvailable", "All objects are available"))
    assert c["ready"] and c["state"] == "Available"
    assert ts.line(c) == "calico: Available"


def test_progressing_line_quotes_reason_and_message():
    c = ts.summarize(status("calico", "False", "True", "False", "ResourceNotReady",
                            'DaemonSet "calico-system/calico-node" is not available'))
    assert not c["ready"]
    assert ts.line(c) == ('calico: Progressing (ResourceNotReady: DaemonSet "calico-system/calico-node" '
                          'is not available)')


def test_degraded_wins_over_available():
    c = ts.summarize(status("apiserver", "True", "False", "True", "ResourceDegraded", "pods crashlooping"))
    assert not c["ready"] and c["state"] == "Degraded"


def test_judge_needs_expected_names_and_at_least_one_component():
    ok = ts.summarize(status("calico", "True", "False", "False"))
    assert ts.judge([ok], ["calico"]) == (True, [])
    assert ts.judge([ok], ["calico", "apiserver"]) == (False, ["apiserver"])
    assert ts.judge([], []) == (False, [])


def test_failure_message_quotes_the_operator():
    bad = ts.summarize(status("calico", "False", "False", "True", "ResourceDegraded", "image pull failed"))
    msg = ts.failure_message({"installed": True, "components": [bad], "missing": ["goldmane"]}, 30)
    assert "calico: Available=False Progressing=False Degraded=True (ResourceDegraded: image pull failed)" in msg
    assert "not reported by the operator yet: goldmane" in msg
    assert "after 30s" in msg


class StubClient:
    def __init__(self, items):
        self.items = items

    def list_or_none(self, api_version, plural):
        assert (api_version, plural) == ("operator.tigera.io/v1", "tigerastatuses")
        return self.items


def test_read_reports_not_installed():
    out = ts.read(StubClient(None), ["calico"])
    assert out["installed"] is False and out["ready"] is False and out["missing"] == ["calico"]


def test_read_sorts_and_judges():
    out = ts.read(StubClient([status("whisker", "True", "False", "False"), status("calico", "True", "False", "False")]))
    assert [c["name"] for c in out["components"]] == ["calico", "whisker"] and out["ready"]
