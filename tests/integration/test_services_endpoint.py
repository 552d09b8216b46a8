"""Role services_endpoint (and module services_endpoint_info) on the local control plane.

The operator is a real Deployment ``tigera-operator`` (label ``k8s-app=tigera-operator``) whose pod kwok runs,
in the test's own namespace (``services_endpoint_namespace`` is a variable), so a restart is a real pod
deletion and a new pod from the ReplicaSet. The local control plane's server is ``https://127.0.0.1:<port>``:
a loopback address, which is exactly what the rule must refuse without ``services_endpoint_allow_loopback`` (on a
node it is the node itself; ``services_endpoint_allow_ip`` is not enough); the tests that write say
``services_endpoint_allow_loopback`` (this control plane's calico-node pods are kwok's: nothing dials it).
"""

import json
import uuid

import pytest
import yaml

pytestmark = pytest.mark.integration

PLAYBOOK = "playbooks/services_endpoint.yml"
HOST_KEY, PORT_KEY = "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"


def get_json(cluster, *args):
    proc = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def failure_messages(res):
    """The messages of failed tasks (and of the failed items of a failed loop)."""
    out = []
    for t in res.tasks:
        result = t["result"]
        if not result.get("failed"):
            continue
        out.append(str(result.get("msg", "")))
        out.extend(str(item.get("msg", "")) for item in result.get("results") or []
                   if item.get("failed") or "exception" in item)  # 2.21: a failed loop item has no "failed"
    return out


def assert_ok(res):
    assert res.rc == 0, "\n".join(failure_messages(res)) + "\n" + res.stdout[-3000:] + res.stderr[-3000:]


def assert_failed(res):
    assert res.rc != 0, res.stdout[-4000:]


def run(ansible, check=False, diff=False, **extra):
    return ansible.playbook(PLAYBOOK, extra_vars=extra, check=check, diff=diff)


def server_port(cluster):
    return cluster.server.rsplit(":", 1)[1]


def operator_pods(cluster, namespace):
    data = get_json(cluster, "pods", "-n", namespace, "-l", "k8s-app=tigera-operator")
    return [p for p in data["items"] if not p["metadata"].get("deletionTimestamp")]


def ready(pod):
    return pod["status"].get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


def configmap(cluster, namespace):
    return get_json(cluster, "configmap", "kubernetes-services-endpoint", "-n", namespace)


@pytest.fixture
def operator(cluster, namespace):
    """Deployment tigera-operator in the test namespace, its pod Running and Ready (kwok)."""
    cluster.apply(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "tigera-operator", "namespace": namespace, "labels": {"k8s-app": "tigera-operator"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"name": "tigera-operator"}},
                 "template": {"metadata": {"labels": {"name": "tigera-operator", "k8s-app": "tigera-operator"}},
                              "spec": {"tolerations": [{"operator": "Exists"}],
                                       "containers": [{"name": "tigera-operator",
                                                       "image": "quay.io/tigera/operator:v1.40.7"}]}}}}))
    cluster.kubectl("rollout", "status", "deployment/tigera-operator", "-n", namespace, "--timeout=120s")
    cluster.wait_for(lambda: len(operator_pods(cluster, namespace)) == 1
                     and ready(operator_pods(cluster, namespace)[0]), timeout=60, what="the operator pod")
    return namespace


# -- the ConfigMap ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra", [{}, {"services_endpoint_allow_ip": True}], ids=["no-flag", "allow_ip-only"])
def test_a_loopback_endpoint_is_refused_without_allow_loopback(cluster, ansible, extra):
    ns = "t-se-refused-%s" % uuid.uuid4().hex[:8]
    mark = cluster.audit.mark()
    res = run(ansible, services_endpoint_platform="kubeadm", services_endpoint_namespace=ns, **extra)
    writes = cluster.audit.writes_since(mark)
    created = cluster.kubectl("get", "namespace", ns, check=False).returncode == 0
    if created:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
    assert_failed(res)
    msgs = failure_messages(res)
    assert any(m.startswith("services_endpoint_allow_loopback: the API server host would be 127.0.0.1 "
                            "(from the kubeconfig's server %s), a loopback address" % cluster.server)
               for m in msgs), msgs
    assert writes == []
    assert not created


def test_configmap_created_with_strings_and_namespace_and_unchanged_on_rerun(cluster, ansible):
    ns = "t-se-create-%s" % uuid.uuid4().hex[:8]
    try:
        res = run(ansible, diff=True, services_endpoint_platform="kubeadm", services_endpoint_allow_loopback=True,
                  services_endpoint_namespace=ns)
        assert_ok(res)
        assert res.changed() == 2                                     # the namespace and the ConfigMap
        assert get_json(cluster, "namespace", ns) is not None
        cm = configmap(cluster, ns)
        assert cm["data"] == {HOST_KEY: "127.0.0.1", PORT_KEY: server_port(cluster)}
        assert all(isinstance(v, str) for v in cm["data"].values())

        mark = cluster.audit.mark()
        again = run(ansible, services_endpoint_platform="kubeadm", services_endpoint_allow_loopback=True,
                    services_endpoint_namespace=ns)
        assert_ok(again)
        assert again.changed() == 0
        assert cluster.audit.writes_since(mark) == []
        assert configmap(cluster, ns)["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]
    finally:
        cluster.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false", check=False)


def test_other_keys_of_the_configmap_stay(cluster, ansible, namespace):
    cluster.kubectl("create", "configmap", "kubernetes-services-endpoint", "-n", namespace,
                    "--from-literal=%s=old.example.com" % HOST_KEY, "--from-literal=%s=6443" % PORT_KEY,
                    "--from-literal=NOTE=kept")
    res = run(ansible, diff=True, services_endpoint_platform="kubeadm", services_endpoint_host="api.example.com",
              services_endpoint_port=443, services_endpoint_namespace=namespace)
    assert_ok(res)
    assert configmap(cluster, namespace)["data"] == {HOST_KEY: "api.example.com", PORT_KEY: "443", "NOTE": "kept"}
    patch = res.result_of("Write the host and port in the ConfigMap - %s/kubernetes-services-endpoint" % namespace)
    assert patch["diff"]["before"]["data"][HOST_KEY] == "old.example.com"
    assert patch["diff"]["after"]["data"][HOST_KEY] == "api.example.com"


# -- the operator restart -----------------------------------------------------------------------------------------

def test_operator_restarted_only_when_the_configmap_changes(cluster, ansible, operator):
    ns = operator
    first = operator_pods(cluster, ns)[0]["metadata"]["uid"]
    common = dict(services_endpoint_platform="kubeadm", services_endpoint_namespace=ns,
                  services_endpoint_host="api-1.example.com")

    res = run(ansible, **common)
    assert_ok(res)
    pods = operator_pods(cluster, ns)
    assert [p["metadata"]["uid"] for p in pods] != [first]
    assert len(pods) == 1 and ready(pods[0])
    second = pods[0]["metadata"]["uid"]
    assert res.result_of("Delete the operator pods so new ones read the ConfigMap - k8s-app=tigera-operator")[
        "changed"] is True

    mark = cluster.audit.mark()
    again = run(ansible, **common)
    assert_ok(again)
    assert again.changed() == 0
    assert cluster.audit.writes_since(mark) == []
    assert [p["metadata"]["uid"] for p in operator_pods(cluster, ns)] == [second]

    res = run(ansible, **dict(common, services_endpoint_host="api-2.example.com"))
    assert_ok(res)
    assert configmap(cluster, ns)["data"][HOST_KEY] == "api-2.example.com"
    assert [p["metadata"]["uid"] for p in operator_pods(cluster, ns)] != [second]


def test_a_rerun_after_a_run_cut_before_the_restart_restarts_the_operator(cluster, ansible, operator):
    """The run is killed (SIGKILL, the whole process tree) right after it wrote the ConfigMap, before it deleted the
    operator pod: the pod runs with the old endpoint. The re-run finds the ConfigMap unchanged and still restarts
    the operator (its pod started before the ConfigMap's last write), saying why; a third run writes nothing."""
    from test_install_ebpf import _kill_at_write  # the audit-log watcher of the install's interruption test

    ns = operator
    first = operator_pods(cluster, ns)[0]["metadata"]["uid"]
    common = dict(services_endpoint_platform="kubeadm", services_endpoint_namespace=ns,
                  services_endpoint_host="api-cut.example.com")
    mark = cluster.audit.mark()
    proc = ansible.start(PLAYBOOK, extra_vars=common)
    assert _kill_at_write(cluster, proc, mark, "configmaps", "kubernetes-services-endpoint"), \
        "services_endpoint.yml ended before it wrote the ConfigMap"
    assert configmap(cluster, ns)["data"][HOST_KEY] == "api-cut.example.com"
    assert [p["metadata"]["uid"] for p in operator_pods(cluster, ns)] == [first], "the cut came after the restart"

    res = ansible.playbook(PLAYBOOK, extra_vars=common, callback="default")
    assert res.rc == 0, res.stdout[-4000:]
    assert "ConfigMap %s/kubernetes-services-endpoint" % ns in res.stdout and "unchanged" in res.stdout
    assert "restarted (" in res.stdout and "had started before the ConfigMap was last written" in res.stdout, \
        res.stdout[-3000:]
    pods = operator_pods(cluster, ns)
    assert first not in [p["metadata"]["uid"] for p in pods] and len(pods) == 1 and ready(pods[0])

    mark = cluster.audit.mark()
    again = run(ansible, **common)
    assert_ok(again)
    assert again.changed() == 0 and cluster.audit.writes_since(mark) == []


def test_no_restart_when_asked_not_to(cluster, ansible, operator):
    before = [p["metadata"]["uid"] for p in operator_pods(cluster, operator)]
    res = run(ansible, services_endpoint_platform="kubeadm", services_endpoint_namespace=operator,
              services_endpoint_host="api.example.com", services_endpoint_restart_operator=False)
    assert_ok(res)
    assert configmap(cluster, operator)["data"][HOST_KEY] == "api.example.com"
    assert [p["metadata"]["uid"] for p in operator_pods(cluster, operator)] == before


def test_check_mode_writes_nothing(cluster, ansible, operator):
    before = [p["metadata"]["uid"] for p in operator_pods(cluster, operator)]
    mark = cluster.audit.mark()
    res = run(ansible, check=True, diff=True, services_endpoint_platform="eks", services_endpoint_namespace=operator,
              services_endpoint_host="abc123.gr7.eu-west-1.eks.amazonaws.com")
    assert_ok(res)
    # nothing persisted; what is sent is only merge_patch's server-side dry runs (the API server merges, check mode
    # stops there): the ConfigMap's creation and the Deployment's dnsConfig patch, nothing else
    sent = cluster.audit.writes_since(mark, include_dry_run=True)
    assert [e for e in sent if "dryRun=All" not in e["requestURI"]] == []
    assert sorted((e["verb"], e["objectRef"]["resource"], e["objectRef"].get("namespace")) for e in sent) == [
        ("create", "configmaps", operator), ("patch", "deployments", operator)]
    assert res.changed() >= 2                      # ConfigMap, AWS DNS patch, the restart it would do
    patch = res.result_of("Write the host and port in the ConfigMap - %s/kubernetes-services-endpoint" % operator)
    assert patch["diff"]["after"]["data"] == {HOST_KEY: "abc123.gr7.eu-west-1.eks.amazonaws.com", PORT_KEY: "443"}
    assert configmap(cluster, operator) is None
    dep = get_json(cluster, "deployment", "tigera-operator", "-n", operator)
    assert "dnsConfig" not in dep["spec"]["template"]["spec"]
    assert [p["metadata"]["uid"] for p in operator_pods(cluster, operator)] == before


# -- AWS DNS --------------------------------------------------------------------------------------------------------

def nameservers(cluster, namespace):
    dep = get_json(cluster, "deployment", "tigera-operator", "-n", namespace)
    return (dep["spec"]["template"]["spec"].get("dnsConfig") or {}).get("nameservers")


def test_eks_gets_the_aws_dns_and_port_443(cluster, ansible, operator):
    before = [p["metadata"]["uid"] for p in operator_pods(cluster, operator)]
    res = run(ansible, services_endpoint_platform="eks", services_endpoint_namespace=operator,
              services_endpoint_allow_loopback=True)
    assert_ok(res)
    assert configmap(cluster, operator)["data"] == {HOST_KEY: "127.0.0.1", PORT_KEY: "443"}
    assert nameservers(cluster, operator) == ["169.254.169.253"]
    pods = operator_pods(cluster, operator)
    assert len(pods) == 1 and ready(pods[0]) and pods[0]["metadata"]["uid"] not in before
    assert pods[0]["spec"]["dnsConfig"]["nameservers"] == ["169.254.169.253"]
    mark = cluster.audit.mark()
    again = run(ansible, services_endpoint_platform="eks", services_endpoint_namespace=operator,
                services_endpoint_allow_loopback=True)
    assert_ok(again)
    assert again.changed() == 0
    assert cluster.audit.writes_since(mark) == []


@pytest.mark.parametrize("platform, aws_dns, expected", [
    ("kubeadm", None, None), ("eks", False, None), ("kubeadm", True, ["169.254.169.253"])])
def test_aws_dns_only_where_wanted(cluster, ansible, operator, platform, aws_dns, expected):
    extra = dict(services_endpoint_platform=platform, services_endpoint_namespace=operator,
                 services_endpoint_host="api.example.com")
    if aws_dns is not None:
        extra["services_endpoint_aws_dns"] = aws_dns
    assert_ok(run(ansible, **extra))
    assert nameservers(cluster, operator) == expected


def test_aws_dns_entry_point_for_the_install(cluster, ansible, operator):
    """tasks_from: aws_dns.yml (what ebpf_install calls after applying the operator)."""
    play = """
- name: AWS DNS only
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Patch the operator
      ansible.builtin.include_role:
        name: calico_ops.lifecycle.services_endpoint
        tasks_from: aws_dns.yml
      vars:
        services_endpoint_platform: kops
        services_endpoint_namespace: %s
""" % operator
    res = ansible.playbook(play)
    assert_ok(res)
    assert nameservers(cluster, operator) == ["169.254.169.253"]
    assert configmap(cluster, operator) is None


# -- bad input fails before any write, naming the variable -----------------------------------------------------------

@pytest.mark.parametrize("extra, words", [
    (dict(services_endpoint_port=70000), "services_endpoint_port: 70000 is out of range"),
    (dict(services_endpoint_host="https://api.example.com"), "services_endpoint_host: 'https://api.example.com' has a scheme"),
    (dict(services_endpoint_host="api.example.com/x"), "services_endpoint_host: 'api.example.com/x' has a path"),
    (dict(services_endpoint_host="api example.com"), "services_endpoint_host: 'api example.com' contains spaces"),
    (dict(services_endpoint_host="10.1.2.3"), "services_endpoint_allow_ip"),
    (dict(services_endpoint_platform="gke"), "services_endpoint_platform"),
    (dict(services_endpoint_port="https"), "services_endpoint_port"),
    (dict(services_endpoint_platform="openshift", services_endpoint_openshift_cluster_name="ocp",
          services_endpoint_host=""),
     "services_endpoint_openshift_base_domain: needed with services_endpoint_openshift_cluster_name"),
    (dict(services_endpoint_timeout=0), "services_endpoint_timeout (0), services_endpoint_rollout_timeout"),
    (dict(services_endpoint_rollout_timeout=3, services_endpoint_poll_interval=5),
     "the interval not longer than either timeout"),
    (dict(services_endpoint_aws_dns_nameservers=[]), "services_endpoint_aws_dns_nameservers is an empty list"),
])
def test_bad_input_fails_before_any_write(cluster, ansible, namespace, extra, words):
    base = dict(services_endpoint_platform="kubeadm", services_endpoint_namespace=namespace,
                services_endpoint_host="api.example.com")
    base.update(extra)
    mark = cluster.audit.mark()
    res = run(ansible, **base)
    assert_failed(res)
    assert any(words in m for m in failure_messages(res)), failure_messages(res)
    assert cluster.audit.writes_since(mark) == []
    assert configmap(cluster, namespace) is None


# -- every platform's derivation (the module, read-only) --------------------------------------------------------------

DERIVE = """
- name: Derive
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Derive for each platform
      calico_ops.lifecycle.services_endpoint_info:
        platform: "{{ item.platform }}"
        allow_ip: "{{ item.allow_ip | default(false) }}"
        allow_loopback: "{{ item.allow_loopback | default(false) }}"
        kops_cluster_name: "{{ item.kops | default(omit) }}"
        openshift_cluster_name: "{{ item.ocp_name | default(omit) }}"
        openshift_base_domain: "{{ item.ocp_domain | default(omit) }}"
        gather: [endpoint]
        fail_on_problems: false
      loop: "{{ cases }}"
      register: derived
"""


def test_every_platform_derivation(cluster, ansible):
    port = int(server_port(cluster))
    cases = [
        ({"platform": "kubeadm", "allow_loopback": True}, ("127.0.0.1", port)),
        ({"platform": "generic", "allow_loopback": True}, ("127.0.0.1", port)),
        ({"platform": "kops", "kops": "demo.k8s.local"}, ("api.internal.demo.k8s.local", 443)),
        ({"platform": "openshift", "ocp_name": "ocp4", "ocp_domain": "example.com"}, ("api.ocp4.example.com", 6443)),
        ({"platform": "eks", "allow_loopback": True}, ("127.0.0.1", 443)),
        ({"platform": "aks", "allow_loopback": True}, ("127.0.0.1", 443)),
        ({"platform": "mke"}, ("proxy.local", 6444)),
    ]
    mark = cluster.audit.mark()
    res = ansible.playbook(DERIVE, extra_vars={"cases": [c for c, _ in cases]})
    assert_ok(res)
    assert cluster.audit.writes_since(mark) == []
    results = res.result_of("Derive for each platform")["results"]
    for (case, expected), out in zip(cases, results):
        assert out["problems"] == [], (case, out["problems"])
        assert (out["endpoint"]["host"], out["endpoint"]["port"]) == expected, case
        assert out["data"] == {HOST_KEY: expected[0], PORT_KEY: str(expected[1])}
        assert out["server"]["url"] == cluster.server
        assert out["platform"] == {"name": case["platform"], "source": "user", "title": out["platform"]["title"],
                                   "details": None}


INFRA_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "infrastructures.config.openshift.io"},
    "spec": {"group": "config.openshift.io", "scope": "Cluster",
             "names": {"plural": "infrastructures", "singular": "infrastructure", "kind": "Infrastructure",
                       "listKind": "InfrastructureList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                               "status": {"type": "object", "properties": {
                                   "apiServerInternalURI": {"type": "string"},
                                   "apiServerURL": {"type": "string"}}}}}}}]}}


@pytest.fixture
def openshift_infrastructure(cluster):
    cluster.apply(yaml.safe_dump(INFRA_CRD))
    cluster.kubectl("wait", "--for=condition=Established", "crd/infrastructures.config.openshift.io", "--timeout=60s")
    cluster.wait_for(lambda: cluster.kubectl("get", "infrastructures.config.openshift.io", check=False).returncode == 0,
                     timeout=60, what="Infrastructure to be served")
    cluster.apply(yaml.safe_dump({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
                                  "metadata": {"name": "cluster"}, "spec": {},
                                  "status": {"apiServerInternalURI": "https://api-int.ocp4.example.com:6443",
                                             "apiServerURL": "https://api.ocp4.example.com:6443"}}))
    yield
    cluster.kubectl("delete", "infrastructures.config.openshift.io", "cluster", "--ignore-not-found", check=False)
    cluster.kubectl("delete", "crd", "infrastructures.config.openshift.io", "--ignore-not-found", "--wait=true",
                    "--timeout=60s", check=False)


def test_openshift_detected_and_endpoint_from_the_infrastructure(cluster, ansible, namespace,
                                                                 openshift_infrastructure):
    res = run(ansible, services_endpoint_namespace=namespace)
    assert_ok(res)
    assert configmap(cluster, namespace)["data"] == {HOST_KEY: "api-int.ocp4.example.com", PORT_KEY: "6443"}
    facts = res.result_of("Publish the endpoint for the roles that run after this one")["ansible_facts"]
    assert facts["services_endpoint_result"]["platform"] == "openshift"
    assert "apiServerInternalURI" in facts["services_endpoint_result"]["host_source"]


def test_a_dns_name_endpoint_is_written_with_the_boot_hang_warning(cluster, ansible, namespace):
    """Calico issue 10683: calico-node in eBPF mode resolves KUBERNETES_SERVICE_HOST at boot and can hang there
    when only the cluster's DNS answers for it. The harness cannot reproduce the hang (no cluster DNS runs here), so
    this shows what the collection does: it writes the name and says so, naming the issue - and an IP says nothing."""
    res = run(ansible, services_endpoint_platform="kubeadm", services_endpoint_namespace=namespace,
              services_endpoint_host="api.cluster.local", services_endpoint_port=6443)
    assert_ok(res)
    shown = res.result_of("Show the endpoint and what changed")["msg"]
    warning = [line for line in shown if line.startswith("WARNING: ")]
    assert warning and "KUBERNETES_SERVICE_HOST api.cluster.local is a DNS name" in warning[0], shown
    assert "Calico issue 10683" in warning[0] and "looks cluster-internal" in warning[0]
    assert configmap(cluster, namespace)["data"][HOST_KEY] == "api.cluster.local"
    ip = run(ansible, services_endpoint_platform="kubeadm", services_endpoint_namespace=namespace,
             services_endpoint_host="10.0.0.10", services_endpoint_port=6443, services_endpoint_allow_ip=True)
    assert_ok(ip)
    assert not [line for line in ip.result_of("Show the endpoint and what changed")["msg"]
                if line.startswith("WARNING: ")]


def test_a_dns_name_is_refused_before_any_write_when_the_installation_says_bpf(pristine_cluster, tmp_path):
    """Calico issue 10683, on a control plane of its own (the operator's real CRDs, an Installation default with the
    BPF data plane, no operator running): a DNS name is refused before any write, in one line naming
    services_endpoint_nodes_resolve_host and its values; with that statement it is written."""
    from localcp.fixtures import Ansible

    cluster = pristine_cluster
    cluster.apply("%s/v3.31.4/manifests/operator-crds.yaml" % cluster.mirror_url)
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/installations.operator.tigera.io")
    cluster.apply(yaml.safe_dump({"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
                                  "metadata": {"name": "default"},
                                  "spec": {"calicoNetwork": {"linuxDataplane": "BPF"}}}))
    ansible = Ansible(cluster, tmp_path)
    common = dict(services_endpoint_platform="kubeadm", services_endpoint_host="api.example.com",
                  services_endpoint_port=6443)
    mark = cluster.audit.mark()
    res = run(ansible, **common)
    assert_failed(res)
    msgs = failure_messages(res)
    # the refusal, then the playbook's rescue failing as the job did with the same words and no diagnostics archive
    # (a refusal before any write changed nothing)
    assert len(msgs) == 2 and msgs[1].endswith(msgs[0]) and "diagnostics archive" not in msgs[1], msgs
    assert msgs[0].startswith(
        "services_endpoint_nodes_resolve_host: the API server host would be the DNS name api.example.com (from "
        "services_endpoint_host) on a cluster in eBPF mode (Installation default has spec.calicoNetwork.linuxDataplane "
        "BPF)"), msgs
    assert "Set services_endpoint_nodes_resolve_host: true (true or false, default false)" in msgs[0]
    assert "Calico issue 10683" in msgs[0] and msgs[0].endswith("nothing was written")
    assert cluster.audit.writes_since(mark) == []
    assert configmap(cluster, "tigera-operator") is None
    # an IP address needs no resolving; the statement lets the name through
    res = run(ansible, **dict(common, services_endpoint_nodes_resolve_host=True))
    assert_ok(res)
    assert configmap(cluster, "tigera-operator")["data"] == {HOST_KEY: "api.example.com", PORT_KEY: "6443"}
    shown = res.result_of("Show the endpoint and what changed")["msg"]
    assert "calico-node: not waited for: the operator did not restart" in shown, shown
