"""When a measured switch is measured again (localcp/switches.py ``Switches.measure``): once, and only when Felix lost
vxlan.calico during it (Calico issue 11016, localcp/felix_race.py) and the test says how to restore the data plane.

The measurement itself and the restart need the real components (test_switch_under_traffic.py, test_dataplane.py);
what is checked here is the decision around them, with the measurement and the log reading replaced."""

import pytest

from localcp import felix_race, switches

LOST = {"node-2": {"pid": 7063, "at": 1795961319.573, "gone": 30, "present": [47], "pod": "calico-node-2z2z9"}}


class _Cluster:
    def nodes_with_network(self):
        return {"node-1": {}, "node-2": {}}


def _targets(recovered):
    return {"pod": {"attempted": 400, "failed": 0 if recovered else 17, "longest_gap_s": 1.0,
                    "recovered": recovered}}


@pytest.fixture
def sw(tmp_path, monkeypatch):
    s = switches.Switches(_Cluster(), tmp_path / "probes")
    s.calls = []
    s.outcomes = []  # what each measurement does: a targets dict to return, or an exception to raise
    s.lost = {}

    def measure_once(name, action, bpf_after, kube_proxy_after, timeout):
        s.calls.append(("measure", name))
        (s.workdir / name).mkdir(parents=True, exist_ok=True)
        outcome = s.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        m = {"switch": name, "targets": outcome}
        s.results[name] = m
        return m
    monkeypatch.setattr(s, "_measure_once", measure_once)
    monkeypatch.setattr(s, "wait_serving", lambda: s.calls.append(("wait_serving",)))
    monkeypatch.setattr(felix_race, "lost_on_nodes", lambda cluster, since=None: dict(s.lost))
    monkeypatch.setattr(felix_race, "heal", lambda cluster, found: s.calls.append(("heal", sorted(found))))
    return s


def _restore(sw):
    return lambda: sw.calls.append(("restore",))


def test_a_switch_that_went_well_is_measured_once(sw):
    sw.outcomes = [_targets(True)]
    sw.lost = LOST  # (not even looked at: nothing was broken)
    m = sw.measure("enable_ebpf", None, True, False, restore=_restore(sw))
    assert sw.calls == [("measure", "enable_ebpf")] and "retried_for" not in m


def test_a_target_left_unanswered_with_felix_lost_is_restarted_restored_and_measured_again(sw):
    sw.outcomes = [_targets(False), _targets(True)]
    sw.lost = LOST
    m = sw.measure("by hand: enable", None, True, False, restore=_restore(sw))
    assert sw.calls == [("measure", "by hand: enable"), ("heal", ["node-2"]), ("restore",), ("wait_serving",),
                        ("measure", "by hand: enable")]
    assert m["targets"]["pod"]["recovered"] and sw.results["by hand: enable"] is m
    assert "Felix on node-2 (pid 7063) lost vxlan.calico" in m["retried_for"] and felix_race.ISSUE in m["retried_for"]
    # both measurements kept, the first beside the second; the table says why there were two
    assert (sw.workdir / "by hand: enable (first, Felix lost vxlan.calico)").is_dir()
    assert (sw.workdir / "by hand: enable").is_dir()
    assert "by hand: enable: measured a second time; the first time Felix on node-2" in switches.table(sw.results)


def test_a_failed_switch_with_felix_lost_is_measured_again(sw):
    sw.outcomes = [AssertionError("enable_ebpf: the switch failed (rc 2)"), _targets(True)]
    sw.lost = LOST
    m = sw.measure("enable_ebpf", None, True, False, restore=_restore(sw))
    assert [c[0] for c in sw.calls] == ["measure", "heal", "restore", "wait_serving", "measure"]
    assert "retried_for" in m


def test_only_once_the_second_measurement_stands_as_it_is(sw):
    sw.outcomes = [_targets(False), _targets(False)]
    sw.lost = LOST
    m = sw.measure("enable_ebpf", None, True, False, restore=_restore(sw))
    assert [c[0] for c in sw.calls].count("measure") == 2 and not m["targets"]["pod"]["recovered"]


def test_a_broken_switch_without_the_signature_is_not_measured_again(sw):
    sw.outcomes = [_targets(False)]
    m = sw.measure("enable_ebpf", None, True, False, restore=_restore(sw))
    assert sw.calls == [("measure", "enable_ebpf")] and not m["targets"]["pod"]["recovered"]
    sw.outcomes = [AssertionError("enable_ebpf: the switch failed (rc 2)")]
    with pytest.raises(AssertionError, match=r"^enable_ebpf: the switch failed \(rc 2\)$"):
        sw.measure("enable_ebpf", None, True, False, restore=_restore(sw))


def test_without_a_way_to_restore_the_loss_is_named_not_retried(sw):
    sw.outcomes = [_targets(False)]
    sw.lost = LOST
    m = sw.measure("enable_ebpf", None, True, False)
    assert sw.calls == [("measure", "enable_ebpf")]
    assert "Felix on node-2" in m["felix_lost"] and "Felix on node-2" in switches.table(sw.results)
    sw.outcomes = [AssertionError("enable_ebpf: the switch failed (rc 2)")]
    with pytest.raises(AssertionError, match="the switch failed .*\nFelix on node-2 .*lost vxlan.calico"):
        sw.measure("enable_ebpf", None, True, False)
