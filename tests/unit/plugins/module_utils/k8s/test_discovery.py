"""k8s/discovery.py: ``discover`` lists every listable top-level type once, failures reported, not skipped; ``Kinds``
reads a group-version once."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import Kinds, discover

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client, standard_api
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.objects_cluster import cluster, gets


def names(resources):
    return sorted(r.name for r in resources)


def test_lists_every_top_level_listable_type_once():
    dyn = standard_api()
    found = discover(client(dyn))
    listable = names(found.listable())
    assert listable == sorted([
        "v1/namespaces", "v1/configmaps", "v1/secrets", "v1/pods", "v1/events",
        "apps/v1/deployments", "events.k8s.io/v1/events",
        "projectcalico.org/v3/networkpolicies", "projectcalico.org/v3/globalnetworkpolicies",
        "example.com/v1/widgets",
    ])
    assert found.failures == []


def test_subresources_and_unlistable_verbs_are_left_out():
    found = discover(client(standard_api()))
    all_names = names(found.resources)
    assert not [n for n in all_names if n.count("/") > 2 and n.startswith("apps/")]
    assert "v1/pods" in all_names and not any(n.startswith("v1/pods/") for n in all_names)
    assert "v1/bindings" in all_names  # served ...
    assert "v1/bindings" not in names(found.listable())  # ... but cannot be listed


def test_non_preferred_version_is_not_listed_twice_but_can_be_found():
    found = discover(client(standard_api()))
    widgets = [r for r in found.listable() if r.plural == "widgets"]
    assert [r.api_version for r in widgets] == ["example.com/v1"]
    assert found.find("example.com/v1beta1", "Widget").plural == "widgets"


def test_find_says_whether_a_kind_is_namespaced():
    found = discover(client(standard_api()))
    assert found.find("projectcalico.org/v3", "NetworkPolicy").namespaced is True
    assert found.find("projectcalico.org/v3", "GlobalNetworkPolicy").namespaced is False
    assert found.find("projectcalico.org/v3", "Nope") is None


@pytest.mark.parametrize("status", [503, 403])
def test_a_failing_group_version_is_reported_with_its_reason(status):
    dyn = standard_api()
    dyn.failing["projectcalico.org/v3"] = (status, "x")
    found = discover(client(dyn))
    assert [(f.group_version, f.status) for f in found.failures] == [("projectcalico.org/v3", status)]
    assert found.failure_for("projectcalico.org/v3").status == status
    assert not found.served("projectcalico.org/v3")
    assert "projectcalico.org/v3/networkpolicies" not in names(found.listable())
    assert "v1/configmaps" in names(found.listable())


def test_unreadable_group_list_raises():
    dyn = standard_api()
    dyn.failing["v1"] = (403, "Forbidden")
    # the core group-version failing is reported like any other ...
    assert [f.group_version for f in discover(client(dyn)).failures] == ["v1"]

    def boom(method, path, body=None, **params):
        raise ClientError("GET /apis: refused", status=403)
    c = client(dyn)

    def request(method, path, **kw):
        if path == "/apis":
            return boom(method, path)
        return Client_request(c, method, path, **kw)
    c.request = request
    with pytest.raises(ClientError):  # ... but without the group list nothing can be known
        discover(c)


def Client_request(c, method, path, **kw):
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client
    return Client.request(c, method, path, **kw)


def test_kinds_reads_a_group_version_once_and_again_when_asked():
    dyn = cluster()
    kinds = Kinds(client(dyn))
    assert kinds.find("v1", "ConfigMap").plural == "configmaps"
    assert kinds.find("v1", "Secret").plural == "secrets"
    assert kinds.find("operator.tigera.io/v1", "Installation") is None
    assert gets(dyn) == ["/api/v1", "/apis/operator.tigera.io/v1"]
    dyn.add_type("operator.tigera.io/v1", "installations", "Installation", namespaced=False)
    assert kinds.find("operator.tigera.io/v1", "Installation") is None  # remembered
    assert kinds.load("operator.tigera.io/v1", refresh=True)["Installation"].plural == "installations"
