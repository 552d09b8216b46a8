"""calico/facts_rules.py, the detection rules of calico_facts, on the objects of the real release manifests and on
hand-made ones."""


import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import facts_rules, objects

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_observed import helm_secret, observed, release_docs


FLAVORS = {
    "calico.yaml": "kubernetes", "calico-typha.yaml": "kubernetes", "canal.yaml": "kubernetes",
    "calico-policy-only.yaml": "kubernetes", "calico-etcd.yaml": "etcd", "canal-etcd.yaml": "etcd",
}


@pytest.mark.parametrize("version", ["v3.27.5", "v3.29.7", "v3.31.4"])
@pytest.mark.parametrize("flavor", sorted(FLAVORS))
def test_every_release_flavor_is_recognised(version, flavor):
    facts, sources, detected = facts_rules.detect(observed(release_docs(version, flavor)))
    assert facts["method"] == "manifest"
    assert facts["datastore"] == FLAVORS[flavor], sources["datastore"]
    assert facts["flavor"] == flavor, sources["flavor"]
    assert facts["version"] == version, sources["version"]
    assert "image" in sources["version"]
    assert facts["variant"] == "Calico" and facts["alp"] is False and detected == {}
    assert facts["node_daemonset"]["namespace"] == "kube-system"


def test_cluster_information_wins_over_the_image_tag_and_installation_over_both():
    docs = release_docs("v3.27.5", "calico.yaml")
    ci = {"metadata": {"name": "default"}, "spec": {"calicoVersion": "v3.28.1", "variant": "Calico"}}
    facts, sources, _detected = facts_rules.detect(observed(docs, cluster_information=ci, cluster_information_api=objects.CRD_API))
    assert facts["version"] == "v3.28.1" and "ClusterInformation" in sources["version"]
    assert facts["cluster_version"] == "v3.28.1"
    inst = {"metadata": {"name": "default"}, "spec": {}, "status": {"calicoVersion": "v3.29.7"}}
    operator = {"metadata": {"name": "tigera-operator", "namespace": "tigera-operator"}}
    facts, sources, _detected = facts_rules.detect(observed(docs, cluster_information=ci, installation=inst,
                                                   operator_deployment=operator))
    assert facts["method"] == "operator" and facts["version"] == "v3.29.7"
    assert "Installation default status.calicoVersion" in sources["version"]


def test_helm_method_and_chart_version_as_the_last_version_source():
    releases = [objects.decode_helm_release(helm_secret(revision=1)),
                objects.decode_helm_release(helm_secret(version="v3.29.7", revision=2)),
                objects.decode_helm_release(helm_secret(chart="other-chart", revision=7))]
    obs = observed(helm_releases=releases, installation={"metadata": {"name": "default"}})
    facts, sources, _detected = facts_rules.detect(obs)
    assert facts["method"] == "helm" and "revision 2" in sources["method"]
    assert facts["datastore"] == "kubernetes" and facts["flavor"] is None
    assert facts["version"] == "v3.29.7" and "Helm release" in sources["version"]
    assert facts["helm_release"]["revision"] == 2


def test_operator_and_none():
    inst = {"metadata": {"name": "default"}, "spec": {"variant": "TigeraSecureEnterprise"}}
    facts, sources, _detected = facts_rules.detect(observed(installation=inst))
    assert facts["method"] == "operator" and facts["variant"] == "TigeraSecureEnterprise"
    assert facts["version"] is None and "none found" in sources["version"]
    facts, sources, _detected = facts_rules.detect(observed())
    assert facts["method"] == "none" and facts["datastore"] is None and facts["version"] is None


def test_datastore_from_configmap_when_datastore_type_is_unset():
    docs = release_docs("v3.27.5", "calico-etcd.yaml")
    facts, sources, _detected = facts_rules.detect(observed(docs))
    assert facts["datastore"] == "etcd" and "etcd_endpoints" in sources["datastore"]
    obs = observed(docs)
    del obs["configmaps"]["calico-config"]
    facts, sources, _detected = facts_rules.detect(obs)
    assert facts["datastore"] == "etcd" and "ETCD_ENDPOINTS" in sources["datastore"]


def test_typha_from_the_service_name_without_a_typha_deployment():
    obs = observed(release_docs("v3.27.5", "calico-typha.yaml"))
    del obs["deployments"]["calico-typha"]
    facts, sources, _detected = facts_rules.detect(obs)
    assert facts["flavor"] == "calico-typha.yaml" and "FELIX_TYPHAK8SSERVICENAME" in sources["flavor"]
    obs["configmaps"]["calico-config"]["data"]["typha_service_name"] = "none"
    assert facts_rules.detect(obs)[0]["flavor"] == "calico.yaml"


def test_alp_detection_and_istio_version():
    obs = observed(release_docs("v3.27.5", "calico.yaml"),
                   felix_configuration={"spec": {"policySyncPathPrefix": "/var/run/nodeagent"}},
                   istiod={"metadata": {"name": "istiod", "namespace": "istio-system"},
                           "spec": {"template": {"spec": {"containers": [
                               {"name": "discovery", "image": "docker.io/istio/pilot:1.15.7"}]}}}})
    facts, sources, _detected = facts_rules.detect(obs)
    assert facts["alp"] is True and "policySyncPathPrefix" in sources["alp"]
    assert facts["istio_version"] == "1.15" and "pilot:1.15.7" in sources["istio_version"]
    obs["felix_configuration"] = None
    obs["application_layer"] = {"spec": {"applicationLayerPolicy": "Enabled"}}
    assert facts_rules.detect(obs)[0]["alp"] is True
    obs["application_layer"] = {"spec": {"applicationLayerPolicy": "Disabled"}}
    facts, _sources, _detected = facts_rules.detect(obs)
    assert facts["alp"] is False and facts["istio_version"] is None


def test_overrides_win_and_keep_the_detected_value():
    docs = release_docs("v3.27.5", "calico.yaml")
    facts, sources, detected = facts_rules.detect(observed(docs), {"version": "v3.14.2", "flavor": "calico-typha.yaml",
                                                                   "alp": False, "method": None})
    assert facts["version"] == "v3.14.2" and "given by the user" in sources["version"]
    assert detected["version"]["value"] == "v3.27.5"
    assert facts["flavor"] == "calico-typha.yaml" and detected["flavor"]["value"] == "calico.yaml"
    assert "alp" in detected and "method" not in detected


def test_overridden_datastore_changes_the_flavor():
    facts, _sources, _detected = facts_rules.detect(observed(release_docs("v3.27.5", "calico.yaml")), {"datastore": "etcd"})
    assert facts["flavor"] == "calico-etcd.yaml"


def test_validate_overrides():
    assert facts_rules.validate_overrides({"method": "kubectl", "version": "3.31"}) == [
        "method must be one of helm, operator, manifest, none, not 'kubectl'",
        "version must be a release version vX.Y.Z (for example v3.31.4), not '3.31'"]
    assert facts_rules.validate_overrides({"method": "helm", "version": "v3.31.4"}) == []


def test_allow_all_upgrade_is_reported():
    gnp = {"metadata": {"name": "default.allow-all-upgrade"}, "spec": {"selector": "has(host-endpoint-upgrade)"}}
    facts, sources, _detected = facts_rules.detect(observed(allow_all_upgrade=gnp, allow_all_upgrade_api=objects.CRD_API))
    assert facts["allow_all_upgrade"] == {"present": True, "api_version": objects.CRD_API,
                                          "name": "default.allow-all-upgrade",
                                          "selector": "has(host-endpoint-upgrade)"}


@pytest.mark.parametrize("version,cluster,required,expected", [
    ("v3.31.4", "v3.31.4", True, True),
    ("v3.31.4", None, False, True),  # an operator install need not have ClusterInformation served
    ("v3.31.4", None, True, False),  # a manifest install on the Kubernetes API datastore must
    ("v3.31.4", "v3.27.5", False, False),  # calico-node has not written the new version yet
    ("v3.27.5", "v3.31.4", False, False),
])
def test_reports_version_needs_clusterinformation_to_agree_where_it_is_required(version, cluster, required, expected):
    facts = {"version": version, "cluster_version": cluster}
    assert facts_rules.reports_version(facts, "v3.31.4", required) is expected


def test_version_not_reported_quotes_both_versions_and_where_each_was_read():
    line = facts_rules.version_not_reported(
        {"version": "v3.27.5", "cluster_version": None},
        {"version": "image tag of DaemonSet kube-system/calico-node", "cluster_version": "no ClusterInformation"},
        "v3.31.4", True, 30)
    assert line == ("The cluster does not report Calico v3.31.4 after 30s: version v3.27.5 (image tag of DaemonSet "
                    "kube-system/calico-node); ClusterInformation default spec.calicoVersion unknown (no "
                    "ClusterInformation, required for a manifest install with the Kubernetes API datastore)")
