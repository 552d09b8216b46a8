# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is Calico's data plane eBPF? Two objects say so: the operator's Installation ``default``
(``spec.calicoNetwork.linuxDataplane``) and FelixConfiguration ``default`` (``spec.bpfEnabled``, what a manifest
install sets, and what the operator sets once it has rolled calico-node out for BPF).

``read`` does the two GETs (a type that is not served, or an object that does not exist, is None); ``is_bpf`` is the
data plane now (the Installation when it names one, else FelixConfiguration); ``ebpf_evidence`` lists what says eBPF
is on or asked for, either object (the connectivity checks use the first, the services endpoint job the second:
a cluster about to switch counts as one in eBPF mode)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
