"""calico_facts' wait: read again inside the one module run until the cluster reports a version (the upgrade's
verification and the fleet gate wait this way instead of retrying the task), on a fake clock."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import wait
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.modules import calico_facts as module
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_clock import Clock


class Failed(Exception):
    pass


class Module(object):
    """What ``_facts`` uses of K8sModule: the params, a client, fail."""

    def __init__(self, **params):
        self.params = dict(wait=False, wait_timeout=600, poll_interval=10, wait_version=None,
                           wait_cluster_information=False)
        self.params.update(params)
        self.clients = 0

    def client(self):
        self.clients += 1
        return object()

    def fail(self, msg, **result):
        raise Failed(msg, result)


@pytest.fixture
def reads(monkeypatch):
    """The facts each read returns, in order (the last one again after); an exception in the list is raised."""
    clock, answers, calls = Clock(), [], []

    def run(_client, _params):
        calls.append(clock.now)
        answer = answers[min(len(calls), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        version, cluster = answer
        return {"changed": False, "facts": {"version": version, "cluster_version": cluster},
                "sources": {"version": "Installation default status.calicoVersion",
                            "cluster_version": "ClusterInformation default spec.calicoVersion"}}

    monkeypatch.setattr(module, "run", run)
    monkeypatch.setattr(module, "until", lambda read, done, params: wait.until(read, done, params, sleep=clock.sleep,
                                                                               clock=clock))
    return answers, calls


def test_waits_until_the_version_and_clusterinformation_report_the_target(reads):
    answers, calls = reads
    answers.extend([("v3.27.5", "v3.27.5"), ("v3.31.4", "v3.27.5"), ("v3.31.4", "v3.31.4")])
    result = module._facts(Module(wait=True, wait_version="v3.31.4", wait_timeout=60, poll_interval=10))
    assert calls == [0, 10, 20] and result["waited"] == 20.0
    assert result["ansible_facts"]["calico"]["version"] == "v3.31.4"


def test_fails_at_the_timeout_quoting_what_the_cluster_reports(reads):
    answers, calls = reads
    answers.append(("v3.31.4", None))
    with pytest.raises(Failed) as failed:
        module._facts(Module(wait=True, wait_version="v3.31.4", wait_cluster_information=True, wait_timeout=30,
                             poll_interval=10))
    msg, result = failed.value.args
    assert calls == [0, 10, 20, 30]
    assert msg.startswith("The cluster does not report Calico v3.31.4 after 30s: version v3.31.4 (Installation")
    assert "spec.calicoVersion unknown" in msg and "required for a manifest install" in msg
    assert result["facts"]["version"] == "v3.31.4"


def test_a_read_that_fails_while_waiting_is_read_again_and_raised_only_at_the_end(reads):
    answers, calls = reads
    answers.extend([ClientError("clusterinformations default: 503 Service Unavailable", status=503),
                    ("v3.31.4", "v3.31.4")])
    assert module._facts(Module(wait=True, wait_version="v3.31.4", wait_timeout=60))["waited"] == 10.0
    del answers[:], calls[:]
    answers.append(ClientError("clusterinformations default: 503 Service Unavailable", status=503))
    with pytest.raises(ClientError):
        module._facts(Module(wait=True, wait_version="v3.31.4", wait_timeout=20))
    assert [t - calls[0] for t in calls] == [0, 10, 20]  # the fake clock went on from the first run


def test_without_wait_one_read_and_no_failure(reads):
    answers, calls = reads
    answers.append(("v3.27.5", None))
    result = module._facts(Module(wait_version="v3.31.4"))
    assert calls == [0] and result["waited"] == 0.0 and result["facts"]["version"] == "v3.27.5"
    answers[0] = ClientError("daemonsets: 403 Forbidden", status=403)
    with pytest.raises(ClientError):
        module._facts(Module())


def test_wait_without_a_version_fails_before_any_read(reads):
    _answers, calls = reads
    m = Module(wait=True, poll_interval=0)
    with pytest.raises(Failed) as failed:
        module._facts(m)
    assert failed.value.args[0] == ("poll_interval is 0: give whole seconds, at least 1; "
                                    "wait: waits for a version; give wait_version")
    assert calls == [] and m.clients == 0
