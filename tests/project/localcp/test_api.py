"""localcp.api (the tests' own API client, and the poll behind every wait of the harness) and localcp.sweep's wait
until objects are gone: one LIST of metadata per collection and poll, not a GET per object."""

import pytest

from localcp import api, sweep


def test_poll_returns_the_first_value_that_holds_or_the_last_one_at_the_timeout():
    values = iter([0, None, 3, 4])
    assert api.poll(lambda: next(values), timeout=5, interval=0) == 3
    calls = []
    last = api.poll(lambda: calls.append(1) or len(calls), timeout=0.05, interval=0.01, until=lambda n: n > 10**6)
    assert last == len(calls) > 1


class _Lists(sweep.Sweeper):
    """A sweeper whose collections are dicts: path of a collection -> names in it; ``None``: the type not served."""

    def __init__(self, collections):  # no client: only names() is asked
        self.collections, self.listed = collections, []

    def names(self, collection):
        self.listed.append(collection)
        names = self.collections.get(collection)
        return None if names is None else set(names)


def test_wait_gone_lists_each_collection_once_per_poll_and_tells_what_is_left():
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    ns = "/api/v1/namespaces"
    s = _Lists({crds: ["a.x", "b.x"], ns: ["calico-system"], "/apis/gone.io/v1/things": None})
    seen = []

    def each(left):
        seen.append(sorted(left))
        s.collections[crds] = ["b.x"] if len(seen) == 1 else []  # a finalizer released, then the last one gone
    paths = [crds + "/a.x", crds + "/b.x", crds + "/c.x", ns + "/calico-system", "/apis/gone.io/v1/things/t"]
    s.collections[ns] = []
    assert s.wait_gone(paths, timeout=5, interval=0, each=each) == []
    assert seen == [[crds + "/a.x", crds + "/b.x"], [crds + "/b.x"]]
    assert s.listed[:3] == [crds, ns, "/apis/gone.io/v1/things"] and s.listed[3:] == [crds, crds]


def test_wait_gone_returns_what_is_left_at_the_timeout():
    s = _Lists({"/api/v1/namespaces": ["stuck"]})
    assert s.wait_gone(["/api/v1/namespaces/stuck"], timeout=0.05, interval=0.01) == ["/api/v1/namespaces/stuck"]


def test_a_delete_that_waits_names_the_object_and_its_finalizers_at_the_timeout(monkeypatch):
    client = object.__new__(api.Api)
    monkeypatch.setattr(client, "_answer", lambda *a, **k: {"kind": "Status"})
    monkeypatch.setattr(client, "get", lambda path, metadata=False: {"metadata": {"finalizers": ["x.io/hold"]}})
    with pytest.raises(api.WaitTimeout, match=r"/api/v1/namespaces/n still there after 0.05s .*x.io/hold"):
        client.delete("/api/v1/namespaces/n", wait=True, timeout=0.05)
    monkeypatch.setattr(client, "_answer", lambda *a, **k: None)
    assert client.delete("/api/v1/namespaces/n", wait=True) is False
