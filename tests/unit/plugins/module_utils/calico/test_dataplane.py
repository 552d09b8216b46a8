"""calico/dataplane.py: is the data plane eBPF, from Installation default and FelixConfiguration default."""

import json

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import dataplane
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import ClientError

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.read_only_transport import Transport, client

INSTALLATION = "/apis/operator.tigera.io/v1/installations/default"
FELIX = "/apis/crd.projectcalico.org/v1/felixconfigurations/default"


def _inst(plane=None):
    return {"metadata": {"name": "default"}, "spec": {"calicoNetwork": {"linuxDataplane": plane} if plane else {}}}


def _felix(bpf=None):
    return {"metadata": {"name": "default"}, "spec": {} if bpf is None else {"bpfEnabled": bpf}}


@pytest.mark.parametrize("inst, felix, bpf, evidence", [
    (None, None, False, 0),
    (_inst("BPF"), None, True, 1),
    (_inst("Iptables"), _felix(True), False, 1),   # the Installation names the data plane; Felix not switched back yet
    (_inst(), _felix(True), True, 1),               # an Installation without a data plane: Felix decides
    (None, _felix(False), False, 0),
    (_inst("BPF"), _felix(True), True, 2),
])
def test_is_bpf_and_the_evidence(inst, felix, bpf, evidence):
    found = dataplane.state(inst, felix)
    assert dataplane.is_bpf(found) is bpf
    assert len(dataplane.ebpf_evidence(found)) == evidence


def test_state_reports_what_was_read():
    assert dataplane.state(_inst("BPF"), None) == {"installation": True, "linux_dataplane": "BPF",
                                                   "bpf_enabled": None}
    assert dataplane.state(None, _felix(False)) == {"installation": False, "linux_dataplane": None,
                                                    "bpf_enabled": False}


def test_read_two_gets_and_an_unserved_type_is_none():
    t = Transport({INSTALLATION: _inst("BPF")})
    assert dataplane.read(client(t)) == {"installation": True, "linux_dataplane": "BPF", "bpf_enabled": None}
    assert t.log == [("GET", INSTALLATION), ("GET", FELIX)]


def test_read_raises_other_errors():
    class Forbidden(object):
        def get(self, *args, **kwargs):
            raise ClientError("installations.operator.tigera.io default: 403 Forbidden", status=403)
    with pytest.raises(ClientError):
        dataplane.read(Forbidden())


# the operator's own view of bpfEnabled (tigera/operator v1.40.7: bpfValidateAnnotations after RestoreV3Metadata)
def _felix_with(field=None, annotations=None):
    return {"metadata": {"annotations": annotations} if annotations is not None else {},
            "spec": {} if field is None else {"bpfEnabled": field}}


@pytest.mark.parametrize("felix, agree", [
    (_felix_with(), True),
    (_felix_with(False, {dataplane.BPF_ANNOTATION: "false"}), True),
    (_felix_with(True, {dataplane.BPF_ANNOTATION: "true"}), True),
    (_felix_with(False), False),                                     # set by someone else
    (_felix_with(None, {dataplane.BPF_ANNOTATION: "true"}), False),  # field removed by someone else
    (_felix_with(True, {dataplane.BPF_ANNOTATION: "false"}), False),
    # what an upgrade from v3.29.7 leaves: operator v1.36.16 annotated the object itself while calico-node had left
    # Calico's metadata there, which operator v1.40.7 restores first - its annotations have no bpfEnabled
    (_felix_with(False, {dataplane.BPF_ANNOTATION: "false", dataplane.V3_METADATA: '{"name":"default"}'}), False),
    (_felix_with(False, {dataplane.V3_METADATA: json.dumps({"annotations": {dataplane.BPF_ANNOTATION: "false"}})}), True),
    (_felix_with(None, {dataplane.V3_METADATA: "not json"}), True),
])
def test_the_operator_changes_bpf_enabled_only_while_its_annotation_agrees(felix, agree):
    problem = dataplane.operator_bpf_problem(felix, "the switch would stop half way")
    assert (problem == "") == agree, problem
    if not agree:
        assert problem.startswith("FelixConfiguration default: spec.bpfEnabled is ") and "so the switch would stop " \
            "half way" in problem and "\n" not in problem
        assert ('{"metadata":{"annotations":{"operator.tigera.io/bpfEnabled":null}},"spec":{"bpfEnabled":null}}'
                in problem)


def test_the_metadata_the_operator_restores_is_named():
    felix = _felix_with(False, {dataplane.BPF_ANNOTATION: "false", dataplane.V3_METADATA: '{"name":"default"}'})
    assert dataplane.operator_bpf_view(felix) == ("false", "")
    assert "(as the operator reads it, from its projectcalico.org/metadata annotation)" in \
        dataplane.operator_bpf_problem(felix, "x")


def test_no_felix_configuration_is_no_problem():
    assert dataplane.operator_bpf_problem(None, "x") == ""
