# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is Calico's data plane eBPF? Two objects say so: the operator's Installation ``default``
(``spec.calicoNetwork.linuxDataplane``) and FelixConfiguration ``default`` (``spec.bpfEnabled``, what a manifest
install sets, and what the operator sets once it has rolled calico-node out for BPF).

``read`` does the two GETs (a type that is not served, or an object that does not exist, is None); ``is_bpf`` is the
data plane now (the Installation when it names one, else FelixConfiguration); ``ebpf_evidence`` lists what says eBPF
is on or asked for, either object (the connectivity checks use the first, the services endpoint job the second:
a cluster about to switch counts as one in eBPF mode). ``operator_bpf_problem`` says whether the operator will
refuse to change ``bpfEnabled``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import ClientError

INSTALLATION = ("operator.tigera.io/v1", "installations", "default")
FELIX = ("crd.projectcalico.org/v1", "felixconfigurations", "default")


def _get(client, api_version, plural, name):
    try:
        return client.get(api_version, plural, name)
    except ClientError as exc:
        if exc.status == 404:  # the type is not served (no operator, no Calico CRDs)
            return None
        raise


def state(installation, felix):
    """``{installation, linux_dataplane, bpf_enabled}`` of the two objects as read (None: absent or unset)."""
    net = ((installation or {}).get("spec") or {}).get("calicoNetwork") or {}
    spec = (felix or {}).get("spec") or {}
    return {"installation": installation is not None, "linux_dataplane": net.get("linuxDataplane") or None,
            "bpf_enabled": spec.get("bpfEnabled") if "bpfEnabled" in spec else None}


def read(client):
    """``state`` of Installation ``default`` and FelixConfiguration ``default``: two GETs."""
    return state(_get(client, *INSTALLATION), _get(client, *FELIX))


def is_bpf(found):
    """The data plane now: the Installation's ``linuxDataplane`` when it names one, else ``bpfEnabled``."""
    if found.get("linux_dataplane"):
        return found["linux_dataplane"] == "BPF"
    return bool(found.get("bpf_enabled"))


def ebpf_evidence(found):
    """What says the cluster is (or is being switched) in eBPF mode: a list of short phrases, empty when none."""
    out = []
    if found.get("linux_dataplane") == "BPF":
        out.append("Installation default has spec.calicoNetwork.linuxDataplane BPF")
    if found.get("bpf_enabled") is True:
        out.append("FelixConfiguration default has spec.bpfEnabled true")
    return out


# tigera/operator v1.40.7: pkg/render/node.go (BPFOperatorAnnotation), pkg/controller/installation/bpf.go
# (bpfValidateAnnotations), pkg/controller/utils/utils.go (RestoreV3Metadata)
BPF_ANNOTATION = "operator.tigera.io/bpfEnabled"
V3_METADATA = "projectcalico.org/metadata"


def operator_bpf_view(felix):
    """``(field, annotation)`` as the operator compares them before it changes ``bpfEnabled`` (each "true", "false"
    or "" for unset). The operator first restores the object's Calico metadata: when the CRD object carries
    ``projectcalico.org/metadata`` (written there by Calico's own client, calico-node's start-up among them), the
    annotations the operator sees are that JSON's, not the object's own."""
    annotations = ((felix or {}).get("metadata") or {}).get("annotations") or {}
    if V3_METADATA in annotations:
        try:
            annotations = (json.loads(annotations[V3_METADATA]) or {}).get("annotations") or {}
        except (ValueError, TypeError, AttributeError):
            annotations = {}
    spec = (felix or {}).get("spec") or {}
    field = "" if spec.get("bpfEnabled") is None else str(bool(spec["bpfEnabled"])).lower()
    return field, str(annotations.get(BPF_ANNOTATION) or "").lower()


def operator_bpf_problem(felix, outcome):
    """A sentence when the operator will refuse to change FelixConfiguration ``default``'s ``bpfEnabled`` (its
    annotation and the field disagree: "has been modified by someone else, refusing to override potential user
    configuration"), else "". ``outcome``: what that refusal would do to the job. Met after an operator upgrade from
    Calico v3.29.7 (operator v1.36.16), which set the field and its annotation on the object while calico-node had left
    ``projectcalico.org/metadata`` there: operator v1.40.7 restores that metadata, which drops the annotation and keeps
    the field. The remedy removes both (unset is false; the operator sets them again)."""
    if not felix:
        return ""
    field, annotation = operator_bpf_view(felix)
    if field == annotation:
        return ""
    own = ((felix.get("metadata") or {}).get("annotations")) or {}
    return ("FelixConfiguration default: spec.bpfEnabled is %s but the operator's annotation %s says %s (as the "
            "operator reads it%s): someone other than the operator set bpfEnabled, and the operator refuses to change it "
            "(\"modified by someone else\"), so %s. "
            "Make them agree first - kubectl patch felixconfigurations.crd.projectcalico.org default --type merge -p "
            "'{\"metadata\":{\"annotations\":{\"%s\":null}},\"spec\":{\"bpfEnabled\":null}}' (unset is false; the "
            "operator sets both again) - then run this again." % (
                field or "unset", BPF_ANNOTATION, annotation or "nothing",
                ", from its %s annotation" % V3_METADATA if V3_METADATA in own else "", outcome, BPF_ANNOTATION))
