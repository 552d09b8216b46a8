"""Check mode: every playbook, run with --check --diff against a cluster where it has work to do (it reports changes
it would make), makes no write (audit log: no create/update/patch/delete by the identity it runs as).

One control plane of this module's own holds the work of every playbook at once: Calico's CRDs (operator-crds.yaml),
an Installation (Iptables), kube-proxy's DaemonSet and ConfigMap, an old all-interfaces host endpoint with
KubeControllersConfiguration default (autoCreate Disabled), and a projectcalico.org/v3 owner (stand-in CRDs) with a
dependent. upgrade.yml in check mode: tests/reliability/test_faults.py (manifest upgrade) and
tests/integration/test_upgrade.py (every manifest flavor).
"""

import pytest
import yaml

from localcp.api import Api
from localcp.audit import describe
from localcp.cluster import ControlPlane
from localcp.fixtures import Ansible, Cluster
from test_host_endpoint_migration import HEPS, KCC, old_hep
from test_install_ebpf import _vars
from test_owner_references import CALICO, CRDS, coll, ref

pytestmark = pytest.mark.integration

TS_API = "operator.tigera.io/v1"
KUBE_PROXY = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-proxy", "namespace": "kube-system"},
     "data": {"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n"}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet",
     "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
     "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
              "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                           "spec": {"tolerations": [{"operator": "Exists"}],
                                    "containers": [{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.33.13"}]}}}},
]


@pytest.fixture(scope="module")
def world():
    """A control plane of this module's own, with work for every playbook."""
    cp = ControlPlane(die_with_parent=True)
    cp.start()
    try:
        cluster = Cluster(cp)
        cluster.apply("%s/v3.31.4/manifests/operator-crds.yaml" % cluster.mirror_url)
        cluster.apply(yaml.safe_dump_all(CRDS))
        for name in ("installations.operator.tigera.io", "hostendpoints.crd.projectcalico.org",
                     "kubecontrollersconfigurations.crd.projectcalico.org") + tuple(c["metadata"]["name"] for c in CRDS):
            cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/" + name)
        cluster.apply(yaml.safe_dump({"apiVersion": TS_API, "kind": "Installation", "metadata": {"name": "default"},
                                      "spec": {"calicoNetwork": {"linuxDataplane": "Iptables", "hostPorts": "Enabled"}}}))
        cluster.apply(yaml.safe_dump_all(KUBE_PROXY))
        cluster.kubectl("rollout", "status", "daemonset/kube-proxy", "-n", "kube-system", "--timeout=120s")
        api = Api(cluster)
        api.create(coll("crd.projectcalico.org/v1", "kubecontrollersconfigurations"), {
            "apiVersion": "crd.projectcalico.org/v1", "kind": "KubeControllersConfiguration",
            "metadata": {"name": "default"}, "spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": "Disabled"}}}}})
        api.create(HEPS, old_hep("node-1-all", "node-1", {"env": "prod"}))
        cluster.wait_for(lambda: api.get("/apis/projectcalico.org/v3"), timeout=60, what="projectcalico.org/v3")
        owner = api.create(coll(CALICO, "networkpolicies", "default"), {
            "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": "default"}})
        api.create(coll("v1", "configmaps", "default"), {"metadata": {
            "name": "dependent", "namespace": "default", "ownerReferences": [ref(owner, controller=True)]}})
        assert api.get(KCC) is not None
        yield cluster
    finally:
        cp.stop(remove_dir=True)


def playbooks(cluster, tmp):
    """playbook -> (variables, whether it reports changes: every playbook but the read-only preflight)."""
    install = _vars(cluster, tmp, ebpf_install_wait=False, ebpf_install_timeout=30, ebpf_install_poll_interval=1,
                    kube_proxy_timeout=30, kube_proxy_poll_interval=1)
    return {
        "preflight.yml": ({"preflight_report_dir": str(tmp / "report")}, False),
        "services_endpoint.yml": ({"services_endpoint_host": "api.cluster.example", "services_endpoint_port": 6443,
                                   "services_endpoint_platform": "kubeadm",
                                   "services_endpoint_nodes_resolve_host": True}, True),
        "kube_proxy.yml": ({"kube_proxy_platform": "kubeadm", "kube_proxy_timeout": 30, "kube_proxy_poll_interval": 1},
                           True),
        "install_ebpf.yml": (install, True),
        "enable_ebpf.yml": (dict(install, ebpf_install_tigerastatus_expected=["calico"]), True),
        "owner_references.yml": ({"owner_references_state": "detached", "owner_references_record_namespace": "default",
                                  "owner_references_record_path": str(tmp / "oref.json")}, True),
        "migrate_host_endpoints.yml": ({"host_endpoint_migration_record_path": str(tmp / "hep.json"),
                                        "host_endpoint_migration_wait_timeout": 10}, True),
    }


@pytest.mark.parametrize("playbook", ["preflight.yml", "services_endpoint.yml", "kube_proxy.yml", "install_ebpf.yml",
                                      "enable_ebpf.yml", "owner_references.yml", "migrate_host_endpoints.yml"])
def test_check_mode_writes_nothing(world, tmp_path, playbook):
    variables, changes = playbooks(world, tmp_path)[playbook]
    mark = world.audit.mark()
    res = Ansible(world, tmp_path).playbook("playbooks/" + playbook, extra_vars=variables, check=True, diff=True,
                                            timeout=400)
    writes = world.audit.writes_since(mark)
    assert res.rc == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert writes == [], [describe(e) for e in writes]
    assert not changes or res.changed() > 0, "nothing to do: the test would prove nothing"
    assert world.audit.reads_since(mark), "no request reached the API server"
