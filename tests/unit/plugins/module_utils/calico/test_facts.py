"""calico/facts.py, the calico_facts job: what it reads of the cluster (a handful of requests, never a write, no
Secret value), behind the real ``Client`` over the in-memory API of fake_k8s, and the facts the rules
(test_facts_rules.py) draw from it."""

import copy
import json

import pytest
import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import facts
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_observed import helm_secret
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_releases import release_text
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import FakeDynamic, NoClient, _error, client

CRD = "crd.projectcalico.org/v1"
ETCD_KEY = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCnNlY3JldA=="  # what no result may hold


def cluster(release=None):
    """The types calico_facts reads; with ``release`` (version, file), that release's workloads and ConfigMaps."""
    dyn = FakeDynamic()
    dyn.add_type("v1", "namespaces", "Namespace", namespaced=False)
    dyn.add_type("v1", "configmaps", "ConfigMap")
    dyn.add_type("v1", "secrets", "Secret")
    dyn.add_type("apps/v1", "daemonsets", "DaemonSet")
    dyn.add_type("apps/v1", "deployments", "Deployment")
    for plural, kind in (("clusterinformations", "ClusterInformation"), ("felixconfigurations", "FelixConfiguration"),
                         ("globalnetworkpolicies", "GlobalNetworkPolicy")):
        dyn.add_type(CRD, plural, kind, namespaced=False)
    if release:
        for doc in yaml.safe_load_all(release_text(*release)):
            plural = {"DaemonSet": "daemonsets", "Deployment": "deployments", "ConfigMap": "configmaps"}.get(
                (doc or {}).get("kind"))
            if plural:
                dyn.put("apps/v1" if plural != "configmaps" else "v1", plural, copy.deepcopy(doc))
    return dyn


def run(dyn, **params):
    return facts.run(client(dyn, check_mode=True), params)


def test_a_manifest_install_is_read_in_a_handful_of_requests_and_nothing_is_written():
    dyn = cluster(("v3.29.7", "calico.yaml"))
    out = run(dyn)
    assert out["changed"] is False
    assert (out["facts"]["method"], out["facts"]["flavor"], out["facts"]["version"]) == (
        "manifest", "calico.yaml", "v3.29.7")
    assert out["facts"]["datastore"] == "kubernetes"
    assert dyn.writes() == []
    assert out["requests"]["write"] == 0 and out["requests"]["read"] == len(dyn.log) <= 16  # 16 GETs and LISTs: no more
    # the ConfigMap calico-node's env names is read, by name, in the manifest's namespace
    assert ("GET", "/api/v1/namespaces/kube-system/configmaps/calico-config", {}) in dyn.log


def test_cluster_information_is_read_from_the_first_api_that_has_it():
    dyn = cluster(("v3.27.5", "calico.yaml"))
    dyn.put(CRD, "clusterinformations", {"metadata": {"name": "default"},
                                         "spec": {"calicoVersion": "v3.28.1", "variant": "Calico"}})
    obs = facts.read(client(dyn))
    assert obs["cluster_information_api"] == CRD and obs["cluster_information"]["spec"]["calicoVersion"] == "v3.28.1"
    assert run(dyn)["facts"]["version"] == "v3.28.1"
    assert facts.read(client(cluster()))["cluster_information"] is None


def test_only_deployed_helm_releases_are_read_and_without_their_values():
    dyn = cluster()
    dyn.put("v1", "secrets", helm_secret(version="v3.29.7"))
    dyn.put("v1", "secrets", helm_secret(version="v3.27.5", revision=0, status="superseded"))
    obs = facts.read(client(dyn))
    assert [(r["revision"], r["chart_version"]) for r in obs["helm_releases"]] == [(1, "v3.29.7")]
    assert "podLabels" not in json.dumps(obs)  # the release's values (the chart's config) are not read out
    lists = [q for m, p, q in dyn.log if p == "/api/v1/namespaces/tigera-operator/secrets"]
    assert [q["labelSelector"] for q in lists] == ["owner=helm,status=deployed"]
    assert run(dyn)["facts"]["method"] == "helm"


def test_names_move_where_it_looks():
    dyn = cluster()
    facts.read(client(dyn), {"operator_namespace": "ops", "manifest_namespace": "calico", "istio_namespace": None})
    paths = [p for _m, p, _q in dyn.log]
    assert "/api/v1/namespaces/ops/secrets" in paths and "/apis/apps/v1/namespaces/calico/daemonsets" in paths
    assert "/apis/apps/v1/namespaces/istio-system/deployments/istiod" in paths  # an empty name keeps the default


def test_the_etcd_secret_is_reported_by_its_key_names_only():
    dyn = cluster(("v3.29.7", "calico-etcd.yaml"))
    assert facts.read(client(dyn))["etcd_secret"] == {"namespace": "kube-system", "name": "calico-etcd-secrets",
                                                      "exists": False, "keys": []}
    dyn.put("v1", "secrets", {"metadata": {"name": "calico-etcd-secrets", "namespace": "kube-system"},
                              "data": {"etcd-key": ETCD_KEY, "etcd-ca": ""}})
    obs = facts.read(client(dyn))
    assert obs["etcd_secret"] == {"namespace": "kube-system", "name": "calico-etcd-secrets", "exists": True,
                                  "keys": ["etcd-key"]}
    assert ETCD_KEY not in json.dumps(obs) and ETCD_KEY not in json.dumps(run(dyn))
    assert facts.read(client(cluster(("v3.29.7", "calico.yaml"))))["etcd_secret"] is None  # no etcd ConfigMap


def forbid(dyn, path, status=403, reason="Forbidden"):
    plain = dyn.request

    def request(method, p, body=None, **params):
        if p == path:
            dyn.log.append((method, p, {}))
            raise _error(status, reason, "%s is not allowed" % p)
        return plain(method, p, body, **params)
    dyn.request = request


@pytest.mark.parametrize("status, reason", [(403, "Forbidden"), (503, "Service Unavailable")])
def test_an_object_that_cannot_be_read_counts_as_absent(status, reason):
    dyn = cluster(("v3.29.7", "calico-etcd.yaml"))
    forbid(dyn, "/api/v1/namespaces/kube-system/secrets/calico-etcd-secrets", status, reason)
    forbid(dyn, "/apis/crd.projectcalico.org/v1/felixconfigurations/default", status, reason)
    obs = facts.read(client(dyn))
    assert obs["felix_configuration"] is None
    assert obs["etcd_secret"] == {"namespace": "kube-system", "name": "calico-etcd-secrets", "exists": None,
                                  "keys": None, "reason": "cannot be read (%d)" % status}


def test_any_other_failure_is_raised():
    dyn = cluster(("v3.29.7", "calico-etcd.yaml"))
    forbid(dyn, "/apis/crd.projectcalico.org/v1/felixconfigurations/default", 500, "Internal Server Error")
    with pytest.raises(ClientError) as err:
        facts.read(client(dyn))
    assert err.value.status == 500
    dyn = cluster(("v3.29.7", "calico-etcd.yaml"))
    forbid(dyn, "/api/v1/namespaces/kube-system/secrets/calico-etcd-secrets", 401, "Unauthorized")
    with pytest.raises(ClientError):
        facts.read(client(dyn))


def test_bad_overrides_are_refused_before_any_request():
    with pytest.raises(ValueError) as err:
        facts.run(NoClient(), {"method": "kubectl", "version": "3.31"})
    assert str(err.value) == ("method must be one of helm, operator, manifest, none, not 'kubectl'; "
                              "version must be a release version vX.Y.Z (for example v3.31.4), not '3.31'")


def test_an_override_wins_and_the_detected_value_is_kept():
    out = run(cluster(("v3.29.7", "calico.yaml")), version="v3.29.6")
    assert out["facts"]["version"] == "v3.29.6"
    assert out["detected"]["version"]["value"] == "v3.29.7"
