"""calico/tigerastatus.py: judging TigeraStatus conditions the way the operator writes them."""

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
    def __init__(self, items, installation=None):
        self.items = items
        self.installation = installation
        self.gets = []

    def list_or_none(self, api_version, plural):
        assert (api_version, plural) == ("operator.tigera.io/v1", "tigerastatuses")
        return self.items

    def get(self, api_version, plural, name, namespace=None, metadata_only=False):
        self.gets.append((api_version, plural, name))
        return self.installation


def observed(obj, generation):
    for cond in obj["status"]["conditions"]:
        cond["observedGeneration"] = generation
    return obj


def test_read_reports_not_installed():
    out = ts.read(StubClient(None), ["calico"])
    assert out["installed"] is False and out["ready"] is False and out["missing"] == ["calico"]


def test_read_sorts_and_judges():
    out = ts.read(StubClient([status("whisker", "True", "False", "False"), status("calico", "True", "False", "False")]))
    assert [c["name"] for c in out["components"]] == ["calico", "whisker"] and out["ready"]


def test_conditions_of_an_older_installation_generation_are_not_ready():
    """The Installation was just changed (generation 3): the operator's Available of generation 2 describes the
    install before the change, so the wait must go on, and the line says why."""
    calico = observed(status("calico", "True", "False", "False"), 2)
    client = StubClient([calico, observed(status("apiserver", "True", "False", "False"), 1)],
                        installation={"metadata": {"name": "default", "generation": 3}})
    out = ts.read(client, ["calico"])
    assert client.gets == [("operator.tigera.io/v1", "installations", "default")]
    by_name = {c["name"]: c for c in out["components"]}
    assert not out["ready"] and not by_name["calico"]["ready"]
    assert by_name["apiserver"]["ready"], "the APIServer's generation is not the Installation's"
    assert ts.line(by_name["calico"]) == ("calico: Pending (NotYetObserved: the operator has not reported on "
                                          "generation 3 of its resource yet (its conditions are of generation 2))")
    assert "NotYetObserved" in ts.failure_message(out, 60)
    calico["status"]["conditions"][0]["observedGeneration"] = 3
    assert ts.read(client, ["calico"])["ready"]


def test_no_observed_generation_reported_means_the_conditions_decide():
    client = StubClient([status("calico", "True", "False", "False")],
                        installation={"metadata": {"generation": 7}})
    assert ts.read(client, ["calico"])["ready"]
    assert ts.observed_generation(status("calico", "True", "False", "False")) is None


def test_no_installation_component_no_get():
    client = StubClient([status("whisker", "True", "False", "False")])
    assert ts.read(client)["ready"] and client.gets == []
