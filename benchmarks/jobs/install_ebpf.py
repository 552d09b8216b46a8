"""Job install_ebpf: playbooks/install_ebpf.yml (open source, the release mirror) on a cluster without Calico.

Ours runs with ``ebpf_install_wait: false`` (TigeraStatus is read once, not waited for) and the time of every task
whose name says "wait" (the operator Deployment, kube-proxy's pods; of the task that applies the CRDs and then waits
for them to be Established, the wait it reports) subtracted. N is the number of nodes of the cluster (the job does
not scale with it). Every run starts from a cluster without Calico and with kube-proxy, and must end with the
Installation asking for the eBPF data plane.

* naive: kubernetes.core.k8s ``src:`` of the same release files and merge patches (``NAIVE``);
* limit: ours' own requests replayed (``CapturedLimit``);
* kubectl: Calico's documented install scripted with kubectl (benchmarks/kubectl_bulk/install_ebpf.sh), its waits
  subtracted as ours' are.
"""

import yaml

import calico_support

from benchmarks.harness import (CapturedLimit, Job, excluding_waits, measured, played, timed_play, timed_script,
                                written_objects)

PLAYBOOK = "playbooks/install_ebpf.yml"
RELEASE = "v3.31.4"

NAIVE = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    base: "{{ manifest_url }}/v3.31.4/manifests"
  tasks:
    - name: Download the release files
      ansible.builtin.get_url:
        url: "{{ base }}/{{ item }}"
        dest: "{{ dir }}/{{ item }}"
        mode: "0644"
      loop: [operator-crds.yaml, tigera-operator.yaml, custom-resources.yaml]
    - name: Operator namespace
      kubernetes.core.k8s:
        definition: {apiVersion: v1, kind: Namespace, metadata: {name: tigera-operator}}
    - name: API server endpoint ConfigMap
      kubernetes.core.k8s:
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: kubernetes-services-endpoint, namespace: tigera-operator}
          data: {KUBERNETES_SERVICE_HOST: api.cluster.example, KUBERNETES_SERVICE_PORT: "6443"}
    - name: CRDs and operator
      kubernetes.core.k8s:
        src: "{{ dir }}/{{ item }}"
      loop: [operator-crds.yaml, tigera-operator.yaml]
    - name: Wait for the Installation CRD
      kubernetes.core.k8s_info:
        kind: CustomResourceDefinition
        name: installations.operator.tigera.io
        wait: true
        wait_condition: {type: Established}
    - name: Custom resources
      kubernetes.core.k8s:
        src: "{{ dir }}/custom-resources.yaml"
    - name: eBPF data plane
      kubernetes.core.k8s:
        state: patched
        api_version: operator.tigera.io/v1
        kind: Installation
        name: default
        merge_type: merge
        definition: {spec: {calicoNetwork: {linuxDataplane: BPF, hostPorts: null}}}
    - name: kube-proxy out of the way
      kubernetes.core.k8s:
        state: patched
        api_version: apps/v1
        kind: DaemonSet
        namespace: kube-system
        name: kube-proxy
        merge_type: strategic-merge
        definition: {spec: {template: {spec: {nodeSelector: {non-calico: "true"}}}}}
"""

KUBE_PROXY = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-proxy", "namespace": "kube-system"},
     "data": {"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
                             "mode: iptables\n"}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet",
     "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
     "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
              "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                           "spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "tolerations": [{"operator": "Exists"}],
                                    "containers": [{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.33.13"}]}}}},
]


class InstallSteps(Job):
    """What the jobs that start from no Calico share (install_ebpf, and the jobs built on its starting state): that
    state, the install's variables and its end state. No other contender than ours and the naive loop."""
    unit = "nodes (whole install)"

    def size(self, n):
        return self._node_count()

    def _drop_kube_proxy(self):
        self.cluster.kubectl("delete", "daemonset,configmap", "kube-proxy", "-n", "kube-system", "--ignore-not-found",
                             check=False)

    def _clean(self):
        """No Calico, kube-proxy as kubeadm installs it: the starting state of every run."""
        inst = calico_support.Install(self.cluster)
        inst.forget_later(RELEASE, "operator-crds.yaml")
        inst.forget_later(RELEASE, "tigera-operator.yaml")
        inst.cleanup()
        self._drop_kube_proxy()
        self.cluster.apply(yaml.safe_dump_all(KUBE_PROXY))

    def teardown(self):
        self._clean()
        self._drop_kube_proxy()

    def _vars(self, rep):
        return {"ebpf_install_variant": "Calico", "ebpf_install_manifest_url": self.cluster.mirror_url,
                "ebpf_install_platform": "kubeadm", "ebpf_install_wait": False,
                "ebpf_install_artifacts_dir": str(self.workdir / ("artifacts-%d" % rep)),
                "ebpf_install_timeout": 120, "ebpf_install_poll_interval": 2,
                "services_endpoint_host": "api.cluster.example", "services_endpoint_port": 6443,
                "preflight_report_dir": str(self.workdir / ("report-%d" % rep))}

    def _check_bpf(self):
        """The Installation asks for the eBPF data plane (the end state every contender must reach)."""
        assert self._get("installation", "default")["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"


class InstallEbpf(CapturedLimit, InstallSteps):
    """install_ebpf.yml; its limit is ours' own requests replayed, its kubectl contender Calico's documented install
    scripted (benchmarks/kubectl_bulk/install_ebpf.sh)."""

    def ours(self, rep):
        self._clean()
        m = excluding_waits(timed_play(self.cluster, self.ansible, PLAYBOOK, self._vars(rep), what="install_ebpf.yml"))
        self._check_bpf()
        rerun = timed_play(self.cluster, self.ansible, PLAYBOOK, self._vars(rep), what="install_ebpf.yml re-run")
        m["changed"] = written_objects(m)
        return m, rerun

    def _capture_run(self, env):
        self._clean()
        return played(self.ansible.playbook(PLAYBOOK, extra_vars=self._vars(99), env=env, timeout=1800),
                      "install_ebpf.yml (capture)")

    def _replay_cycle(self, stream, concurrency):
        self._clean()
        return self._replayed(stream, concurrency, self._check_bpf)

    def naive(self, rep):
        self._clean()
        d = self.workdir / ("naive-%d" % rep)
        d.mkdir(exist_ok=True)
        variables = {"manifest_url": self.cluster.mirror_url, "dir": str(d)}
        m = excluding_waits(timed_play(self.cluster, self.ansible, NAIVE, variables, what="naive install"))
        self._check_bpf()
        return m

    def _script_run(self, script, args, check):
        """A kubectl bulk script (benchmarks/kubectl_bulk/) timed, its own waits (``wait_s`` it prints) subtracted
        as ours' tasks named "wait" are; requests from the audit log (user admin); ``check()`` after it."""
        mark = self.cluster.audit.mark()
        wall, out = timed_script(self.cluster, script, *args)
        waits = sum(float(line.split()[1]) for line in out.splitlines() if line.startswith("wait_s "))
        return measured(self.cluster, mark, wall, waits, check)

    def kubectl(self, rep):
        """Calico's documented install scripted with kubectl (benchmarks/kubectl_bulk/install_ebpf.sh)."""
        self._clean()
        work = self._kubectl_work(rep)
        v = self._vars(rep)
        return self._script_run("install_ebpf.sh", ["%s/%s/manifests" % (v["ebpf_install_manifest_url"], RELEASE),
                                                    v["services_endpoint_host"], str(v["services_endpoint_port"]),
                                                    str(work)], self._check_bpf)
