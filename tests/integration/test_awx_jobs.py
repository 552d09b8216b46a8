"""Every job template of playbooks/awx/configure.yml, run the way AWX runs a job: by ansible-runner (AWX's
execution engine), in a private data directory holding the project (this repository's playbooks and
inventories), the inventory, the extra variables AWX would build from the template's survey (the survey's
defaults, validated as AWX validates them, then the launch's answers) and the environment AWX's built-in
"OpenShift or Kubernetes API Bearer Token" credential type injects (K8S_AUTH_HOST, K8S_AUTH_API_KEY,
K8S_AUTH_VERIFY_SSL, K8S_AUTH_SSL_CA_CERT: the CA written to a 0600 file in the private data directory), with a
TokenRequest token of the ServiceAccount calico-ops/calico-ops of docs/rbac.yml (its own roles and bindings
only, no kubeconfig). The collection comes from its built tarball, installed as an execution environment holds
it. Each test asserts the job's events (runner's job_events), its set_stats artifacts (what AWX shows as the
job's artifacts) and the cluster's state, and that the writes were made by the ServiceAccount.

What this does not prove (AWX itself cannot run here): the job templates' creation through AWX's API (the
awx.awx tasks of configure.yml), the project sync, the container image of the execution environment, and
AWX's rendering of the custom credential type's injectors (tested by rendering in tests/project)."""

import base64
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

import ansible_collections.kubernetes.core as kubernetes_core

ansible_runner = pytest.importorskip("ansible_runner")  # noqa: E402 - requirements-dev.txt pins it

from calico_support import (CalicoNodeStandIn, Install, get, image_tag, nudge_crds, wait_daemonset,  # noqa: E402
                            remove_operator_install, wipe_calico)
from kube_controllers import (METRICS_OFF, KubeControllers, calico_crd_docs,  # noqa: E402
                              delete_automatic_endpoints)
from localcp.fixtures import KWOK_FELIX_WINDOW_VAR, NO_NETWORK_VARS  # noqa: E402

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SITE = str(Path(kubernetes_core.__path__[0]).parents[2])
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
RBAC = yaml.safe_load((ROOT / "docs" / "rbac.yml").read_text())["items"]
SA_USER = "system:serviceaccount:calico-ops:calico-ops"
CRD = "crd.projectcalico.org/v1"


def _run(cmd, env=None, cwd=None):
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, "%s failed:\n%s\n%s" % (cmd, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


# ---- what AWX does before ansible-runner starts ---------------------------------------------------------------------

def survey_element_errors(q, data):
    """AWX's validation of one survey element (SurveyJobTemplateMixin._survey_element_validation) for the types the
    generated surveys use."""
    var = q["variable"]
    if var not in data:
        return ["'%s' value missing" % var] if q.get("required") else []
    value = data[var]
    if q["type"] in ("text", "textarea", "password"):
        if not isinstance(value, str):
            return ["Value %s for '%s' expected to be a string." % (value, var)]
        if q.get("min") not in ("", None) and len(value) < int(q["min"]):
            return ["'%s' too short" % var]
        if q.get("max") not in ("", None) and len(value) > int(q["max"]):
            return ["'%s' too long" % var]
    elif q["type"] == "integer":
        if type(value) is not int:
            return ["Value %s for '%s' expected to be an integer." % (value, var)]
    elif q["type"] == "multiselect":
        if not isinstance(value, list):
            return ["'%s' value is expected to be a list." % var]
        choices = q["choices"] if isinstance(q["choices"], list) else [c for c in q["choices"].splitlines() if c.strip()]
        return ["Value %s for '%s' expected to be one of %s." % (v, var, choices) for v in value if v not in choices]
    elif q["type"] == "multiplechoice":
        choices = q["choices"] if isinstance(q["choices"], list) else [c for c in q["choices"].splitlines() if c.strip()]
        if value not in choices:
            return ["Value %s for '%s' expected to be one of %s." % (value, var, choices)]
    return []


def awx_extra_vars(survey_spec, answers):
    """The job's extra variables as AWX builds them on launch (_update_unified_job_kwargs): each survey default that
    passes the element's validation, then the launch's answers, each of which must pass it (else AWX refuses the
    launch: variables_needed_to_start)."""
    spec = survey_spec["spec"]
    by_var = {q["variable"]: q for q in spec}
    unknown = sorted(set(answers) - set(by_var))
    assert not unknown, "not survey questions (AWX rejects them without ask_variables_on_launch): %s" % unknown
    errors = [e for q in spec for e in survey_element_errors(q, answers)]
    assert not errors, "AWX would refuse the launch: %s" % errors
    extra = {}
    for q in spec:
        if q.get("default") is not None and not survey_element_errors(q, {q["variable"]: q["default"]}):
            extra[q["variable"]] = q["default"]
    extra.update(answers)
    return extra


def inject_bearer_token(credential, private_data_dir):
    """awx/main/models/credential/injectors.py kubernetes_bearer_token(): the env of the built-in credential type."""
    env = {"K8S_AUTH_HOST": credential["host"], "K8S_AUTH_API_KEY": credential["bearer_token"]}
    if credential.get("verify_ssl") and "ssl_ca_cert" in credential:
        env["K8S_AUTH_VERIFY_SSL"] = "True"
        handle, path = tempfile.mkstemp(dir=str(private_data_dir))
        with os.fdopen(handle, "w") as f:
            os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
            f.write(credential["ssl_ca_cert"])
        env["K8S_AUTH_SSL_CA_CERT"] = path
    else:
        env["K8S_AUTH_VERIFY_SSL"] = "False"
    return env


class Job(object):
    def __init__(self, runner, extra_vars, mark, private_data_dir):
        self.status, self.rc = runner.status, runner.rc
        self.events = list(runner.events)
        self.stdout = runner.stdout.read() if runner.stdout else ""
        self.extra_vars = extra_vars
        self.mark = mark
        self.private_data_dir = private_data_dir

    def of(self, kind):
        return [e for e in self.events if e.get("event") == kind]

    @property
    def stats(self):
        found = self.of("playbook_on_stats")
        assert len(found) == 1, [e.get("event") for e in self.events][-10:]
        return found[0]["event_data"]

    @property
    def artifacts(self):
        """What AWX stores as the job's artifacts: set_stats data, carried by the stats event."""
        return self.stats.get("artifact_data") or {}

    def task_results(self, task_suffix):
        return [e["event_data"] for e in self.events if e.get("event") in ("runner_on_ok", "runner_on_failed")
                and e["event_data"].get("task", "").endswith(task_suffix)]

    def role_tasks(self):
        return {e["event_data"].get("role") for e in self.of("runner_on_ok")} - {None, ""}

    def assert_successful(self):
        failed = [(e["event_data"].get("task"), e["event_data"].get("res", {}).get("msg"))
                  for e in self.of("runner_on_failed") if not e["event_data"].get("ignore_errors")]
        assert self.status == "successful" and self.rc == 0, "%s rc=%s failed=%s\n%s" % (
            self.status, self.rc, failed, self.stdout[-6000:])
        assert failed == [] and self.of("runner_on_unreachable") == []
        assert self.of("playbook_on_start") and self.stats["failures"] == {} and self.stats["dark"] == {}
        # the events are AWX's: numbered in order, every one of this job
        counters = [e["counter"] for e in self.events]
        assert counters == sorted(counters) and len(set(counters)) == len(counters)


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """The job templates configure.yml would create, with their surveys (rendered, AWX not contacted)."""
    out = tmp_path_factory.mktemp("awx-render") / "objects.json"
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    _run([BIN / "ansible-playbook", ROOT / "playbooks" / "awx" / "configure.yml", "-e", "awx_render_to=%s" % out],
         env=env, cwd=str(ROOT))
    rendered = json.loads(out.read_text())["job_templates"]
    return {jt["playbook"]: jt for jt in rendered}


@pytest.fixture(scope="module")
def execution_environment(tmp_path_factory):
    """The collections an execution environment built from execution-environment.yml holds: this collection from
    its tarball, kubernetes.core (here from the ansible package)."""
    top = tmp_path_factory.mktemp("ee")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(top / "collections"))
    _run([BIN / "ansible-galaxy", "collection", "build", "--output-path", top / "dist", ROOT], env=env, cwd=str(top))
    tarball = top / "dist" / ("%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"]))
    _run([BIN / "ansible-galaxy", "collection", "install", "--no-deps", "-p", top / "collections", tarball], env=env,
         cwd=str(top))
    return "%s%s%s" % (top / "collections", os.pathsep, SITE)


def _delete_rbac(cluster):
    for d in reversed(RBAC):
        if d["kind"] == "Namespace" and d["metadata"]["name"] != "calico-ops":
            continue  # tigera-operator: other tests' and the install's
        args = ["delete", d["kind"].lower(), d["metadata"]["name"], "--ignore-not-found", "--wait=false"]
        if d["metadata"].get("namespace"):
            args += ["-n", d["metadata"]["namespace"]]
        cluster.kubectl(*args, check=False)


@pytest.fixture(scope="module")
def credential(cluster):
    """docs/rbac.yml applied as it is (ServiceAccount calico-ops/calico-ops, its roles and bindings), and the inputs
    of an "OpenShift or Kubernetes API Bearer Token" credential: the API server, a TokenRequest token of that
    ServiceAccount, verify_ssl and the CA that signed the API server's certificate."""
    from kubernetes import client as k8s_client, config as k8s_config
    cluster.wait_for(lambda: cluster.kubectl("get", "namespace", "calico-ops", "-o", "jsonpath={.status.phase}",
                                             check=False).stdout != "Terminating",
                     timeout=180, interval=1, what="the namespace calico-ops of an earlier test to go")
    cluster.apply((ROOT / "docs" / "rbac.yml").read_text())
    api = k8s_client.CoreV1Api(k8s_config.new_client_from_config(config_file=cluster.kubeconfig))
    request = k8s_client.AuthenticationV1TokenRequest(spec=k8s_client.V1TokenRequestSpec(
        audiences=[], expiration_seconds=3600))
    token = cluster.wait_for(lambda: api.create_namespaced_service_account_token(
        "calico-ops", "calico-ops", request).status.token, timeout=30, what="a TokenRequest token")
    kubeconfig = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    ca = base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    yield {"host": cluster.server, "bearer_token": token, "verify_ssl": True, "ssl_ca_cert": ca}
    _delete_rbac(cluster)


@pytest.fixture
def awx_job(cluster, templates, execution_environment, credential, tmp_path, monkeypatch):
    """run(playbook, answers): the job template of ``playbook`` launched with the survey ``answers``."""
    # nothing of the test's own identity reaches the job: only what the credential injects authenticates
    for key in list(os.environ):
        if key.startswith("K8S_AUTH_") or key in ("KUBECONFIG", "CALICO_OPS_MIRROR_URL", "CALICO_OPS_CHART_REPO_URL"):
            monkeypatch.delenv(key)
    runs = []

    def run(playbook, answers=None, inventory_vars=None, inventory_files=None, inject_credential=True, artifacts=None):
        """``inventory_files``: more inventory sources beside the imported one (name -> content; a fleet's);
        ``inject_credential`` False: no credential on the job (a fleet's clusters bring their own settings);
        ``artifacts``: what an earlier node of a workflow published (set_stats), passed on as AWX does."""
        jt = templates[playbook]
        extra = awx_extra_vars(jt["survey_spec"], dict(answers or {}))
        extra.update(artifacts or {})
        pdd = tmp_path / ("job%d" % (len(runs) + 1))
        # the project: a checkout of this repository (the playbooks and inventories AWX reads from it)
        for folder in ("playbooks", "inventories"):
            shutil.copytree(str(ROOT / folder), str(pdd / "project" / folder))
        # the inventory: imported from the project's inventories/local, plus this cluster's mirror of the releases
        shutil.copytree(str(ROOT / "inventories" / "local"), str(pdd / "inventory"))
        local = {"calico_manifest_url": cluster.mirror_url, "calico_chart_repo_url": cluster.chart_repo_url,
                 # kwok's calico-node: no Felix restarts onto eBPF, the window after bpfEnabled would only wait
                 KWOK_FELIX_WINDOW_VAR: 0}
        local.update(NO_NETWORK_VARS)  # kwok's nodes carry no packet: no connectivity check or prober around the jobs
        local.update(inventory_vars or {})
        (pdd / "inventory" / "group_vars" / "all" / "zz_awx_inventory.yml").write_text(yaml.safe_dump(local))
        for name, content in (inventory_files or {}).items():
            (pdd / "inventory" / name).write_text(content)
        (pdd / "home").mkdir()
        envvars = inject_bearer_token(credential, pdd) if inject_credential else {}
        envvars.update({"ANSIBLE_COLLECTIONS_PATH": execution_environment, "HOME": str(pdd / "home"),
                        "PATH": str(BIN) + os.pathsep + os.environ.get("PATH", ""), "ANSIBLE_NOCOLOR": "1",
                        "ANSIBLE_FORCE_COLOR": "0", "JOB_ID": str(len(runs) + 1), "AWX_HOST": "https://awx.invalid"})
        mark = cluster.audit.mark()
        runner = ansible_runner.run(private_data_dir=str(pdd), playbook=jt["playbook"],
                                    inventory=str(pdd / "inventory"), envvars=envvars, extravars=extra,
                                    ident="job", quiet=True, settings={"suppress_ansible_output": True})
        job = Job(runner, extra, mark, pdd)
        runs.append(job)
        # the credential went where AWX puts it: a 0600 file in the private data directory
        if inject_credential:
            ca_file = Path(envvars["K8S_AUTH_SSL_CA_CERT"])
            assert ca_file.parent == pdd and stat.S_IMODE(ca_file.stat().st_mode) == 0o600
        # the token is not in the job's output or events
        assert credential["bearer_token"] not in job.stdout
        assert credential["bearer_token"] not in json.dumps(job.events)
        return job

    return run


def writes_by_the_service_account(cluster, job):
    return cluster.audit.writes_since(job.mark, users=(SA_USER,))


def configmap(cluster, namespace, name):
    proc = cluster.kubectl("get", "configmap", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


# ---- the jobs ----------------------------------------------------------------------------------------------------

def test_every_job_template_is_run_by_a_test_here(templates):
    """A new job template in configure.yml needs a test of its own in this file."""
    covered = {"playbooks/preflight.yml", "playbooks/services_endpoint.yml", "playbooks/kube_proxy.yml",
               "playbooks/install_ebpf.yml", "playbooks/enable_ebpf.yml", "playbooks/owner_references.yml",
               "playbooks/migrate_host_endpoints.yml", "playbooks/upgrade.yml", "playbooks/disable_ebpf.yml",
               "playbooks/migrate_datastore.yml", "playbooks/migrate_to_operator.yml",
               "playbooks/collect_diagnostics.yml", "playbooks/check_connectivity.yml", "playbooks/fleet_rollout.yml"}
    assert set(templates) == covered


def test_survey_defaults_become_extra_vars_as_awx_builds_them(templates):
    """The survey defaults AWX passes (and those it drops: a multiple choice default of '' is not a choice, an
    integer question without a default), for the install template."""
    jt = templates["playbooks/install_ebpf.yml"]
    extra = awx_extra_vars(jt["survey_spec"], {})
    for q in jt["survey_spec"]["spec"]:
        if q["type"] == "multiplechoice" and q["default"] not in q["choices"]:
            assert q["variable"] not in extra
        if q["type"] == "integer" and q["default"] == "":
            assert q["variable"] not in extra
    assert extra["ebpf_install_wait"] in ("true", "false")  # a bool question's answer is a string
    with pytest.raises(AssertionError, match="AWX would refuse the launch"):
        awx_extra_vars(jt["survey_spec"], {"ebpf_install_variant": "NotAVariant"})
    with pytest.raises(AssertionError, match="not survey questions"):
        awx_extra_vars(jt["survey_spec"], {"ebpf_install_manifest_url": "http://x"})


def test_preflight_job(cluster, awx_job):
    nodes = cluster.kubectl("get", "nodes", "-o", "name").stdout.split()  # kubectl: not the modules' client
    job = awx_job("playbooks/preflight.yml", {"preflight_fail_when_ineligible": "true"})
    job.assert_successful()
    assert "preflight" in job.role_tasks()
    summary = job.artifacts["calico_ops_preflight"]
    # the survey's default for preflight_platform (auto) is an extra variable: it wins over the inventory's
    # calico_platform (kubeadm), so the platform is detected, and kwok's nodes look like a generic cluster
    assert job.extra_vars["preflight_platform"] == "auto"
    assert summary["eligible"] is True and summary["verdict"] == "ok" and summary["platform"] == "generic", summary
    assert summary["nodes"] == {"ok": len(nodes), "warn": 0, "fail": 0, "total": len(nodes)}
    # read-only, and it read the cluster as the ServiceAccount
    assert writes_by_the_service_account(cluster, job) == []
    assert cluster.audit.reads_since(job.mark, users=(SA_USER,))
    # and only as the ServiceAccount: no request of the modules' clients (k8s/transport.py's, or the kubernetes
    # Python client kubernetes.core builds) came as the admin of the local control plane's kubeconfig (kwok and the
    # controllers, also admin, use other clients)
    assert [e["requestURI"] for e in cluster.audit.events_since(job.mark, users=("admin",))
            if (e.get("userAgent") or "").startswith(("OpenAPI-Generator", "calico-ops/"))] == []
    assert any((e.get("userAgent") or "").startswith("calico-ops/")
               for e in cluster.audit.events_since(job.mark, users=(SA_USER,)))


def test_collect_diagnostics_job(cluster, awx_job, tmp_path):
    """The diagnostics template's job: the archive in the directory its survey names (a volume the execution
    environment keeps), 0600, read-only, with nothing forbidden to the ServiceAccount of docs/rbac.yml."""
    where = tmp_path / "kept"
    job = awx_job("playbooks/collect_diagnostics.yml", {"diagnostics_dir": str(where), "diagnostics_log_lines": 20})
    job.assert_successful()
    assert "diagnostics" in job.role_tasks()
    summary = job.artifacts["calico_diagnostics"]
    archives = sorted(where.glob("calico-diagnostics-*.tar.gz"))
    assert [str(a) for a in archives] == [summary["path"]], (archives, summary)
    assert stat.S_IMODE(archives[0].stat().st_mode) == 0o600 and summary["size"] == archives[0].stat().st_size
    assert not [p for p in summary["problems"] if "forbidden" in p.lower()], summary["problems"]
    assert writes_by_the_service_account(cluster, job) == []
    assert cluster.audit.reads_since(job.mark, users=(SA_USER,))


def test_check_connectivity_job_on_nodes_without_a_network(cluster, awx_job):
    """The connectivity template's job on this control plane, whose nodes are kwok's (no packet flows: the check
    itself runs against the real data plane in test_dataplane.py): with the ServiceAccount of docs/rbac.yml it plans,
    deploys its probe workload into its own namespace, waits within connectivity_ready_timeout, fails quoting what
    the cluster says of each host pod the API server could not reach, and removes its workload - nothing forbidden,
    nothing written outside its namespace."""
    job = awx_job("playbooks/check_connectivity.yml", {"connectivity_max_nodes": 2, "connectivity_attempts": 1},
                  inventory_vars={"connectivity_ready_timeout": 10})
    assert job.status == "failed", job.stdout[-3000:]
    failed = [e["event_data"] for e in job.of("runner_on_failed")
              if e["event_data"].get("task", "").endswith("Fail when the probe workload did not get ready in time")]
    assert failed, [(e["event_data"].get("task"), e["event"]) for e in job.events if e.get("event", "").startswith("runner")]
    msg = failed[0]["res"]["msg"]
    assert msg.startswith("connectivity: the probe workload in calico-ops-connectivity was not ready within 10 s "
                          "(connectivity_ready_timeout): "), msg
    # the API server's own refusal, quoted: this control plane's kwok nodes have loopback addresses, which
    # kube-apiserver does not proxy to ("address not allowed"); on a real cluster without a network it is a timeout
    assert "host pod host-node-1 on node-1 to client pod client-node-1: the API server's proxy to pod host-node-1: " \
           "pods calico-ops-connectivity/host-node-1:8083/proxy/dial: 400 Bad Request: address not allowed" in msg, msg
    assert "forbidden" not in job.stdout.lower(), job.stdout[-3000:]
    writes = writes_by_the_service_account(cluster, job)
    assert writes and all(e["objectRef"].get("namespace") == "calico-ops-connectivity"
                          or e["objectRef"].get("name") == "calico-ops-connectivity" for e in writes), writes
    assert cluster.kubectl("get", "namespace", "calico-ops-connectivity", check=False).returncode != 0


@pytest.fixture
def kube_proxy_daemonset(cluster):
    wipe_calico(cluster)
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
          "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                   "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                                "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                         "tolerations": [{"operator": "Exists"}],
                                         "containers": [{"name": "kube-proxy",
                                                         "image": "registry.k8s.io/kube-proxy:v1.33.13"}]}}}}
    cluster.apply(yaml.safe_dump(ds))
    cluster.kubectl("rollout", "status", "daemonset/kube-proxy", "-n", "kube-system", "--timeout=120s")
    yield
    remove_operator_install(cluster)
    cluster.kubectl("delete", "daemonset", "kube-proxy", "-n", "kube-system", "--ignore-not-found", check=False)


def test_services_endpoint_and_kube_proxy_jobs(cluster, kube_proxy_daemonset, awx_job):
    cluster.kubectl("create", "namespace", "tigera-operator", check=False)
    job = awx_job("playbooks/services_endpoint.yml", {"services_endpoint_platform": "kubeadm",
                                                      "services_endpoint_allow_loopback": "true"})
    job.assert_successful()
    cm = configmap(cluster, "tigera-operator", "kubernetes-services-endpoint")
    host, port = cluster.server.split("://", 1)[1].rsplit(":", 1)
    assert cm and cm["data"] == {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}, cm
    assert any(w["objectRef"].get("resource") == "configmaps" for w in writes_by_the_service_account(cluster, job))
    assert job.stats["changed"].get("localhost", 0) >= 1

    job = awx_job("playbooks/kube_proxy.yml", {"kube_proxy_state": "disabled", "kube_proxy_platform": "kubeadm",
                                              "kube_proxy_timeout": 120})
    job.assert_successful()
    assert job.extra_vars["kube_proxy_timeout"] == 120
    ds = json.loads(cluster.kubectl("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json").stdout)
    assert ds["spec"]["template"]["spec"]["nodeSelector"].get("non-calico") == "true", ds["spec"]["template"]["spec"]
    assert [w["objectRef"]["name"] for w in writes_by_the_service_account(cluster, job)
            if w["objectRef"].get("resource") == "daemonsets"] == ["kube-proxy"]


def test_install_then_enable_jobs(cluster, kube_proxy_daemonset, awx_job):
    job = awx_job("playbooks/install_ebpf.yml",
                  {"ebpf_install_variant": "Calico", "ebpf_install_platform": "kubeadm", "ebpf_install_wait": "false",
                   "ebpf_install_timeout": 120},
                  inventory_vars={"ebpf_install_manifest_url": cluster.mirror_url, "ebpf_install_poll_interval": 5,
                                  "kube_proxy_timeout": 120, "kube_proxy_poll_interval": 5})
    job.assert_successful()
    summary = job.artifacts["calico_ebpf_install"]
    assert summary["variant"] == "Calico" and summary["platform"] == "kubeadm", summary
    inst = json.loads(cluster.kubectl("get", "installation", "default", "-o", "json").stdout)
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    ds = json.loads(cluster.kubectl("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json").stdout)
    assert ds["spec"]["template"]["spec"]["nodeSelector"].get("non-calico") == "true"
    written = {w["objectRef"].get("resource") for w in writes_by_the_service_account(cluster, job)}
    assert {"customresourcedefinitions", "deployments", "installations", "configmaps"} <= written, written

    # an operator install on iptables: the enable template switches it to eBPF
    cluster.kubectl("patch", "installation", "default", "--type=merge",
                    "-p", json.dumps({"spec": {"calicoNetwork": {"linuxDataplane": "Iptables"}}}))
    # (the variant is answered: the survey's default, the role's TigeraSecureEnterprise, would win over the
    # inventory's ebpf_install_variant, as every survey default does)
    job = awx_job("playbooks/enable_ebpf.yml",
                  {"ebpf_install_variant": "Calico", "ebpf_install_platform": "kubeadm", "ebpf_install_wait": "false",
                   "ebpf_install_timeout": 120},
                  inventory_vars={"kube_proxy_timeout": 120, "kube_proxy_poll_interval": 5})
    job.assert_successful()
    inst = json.loads(cluster.kubectl("get", "installation", "default", "-o", "json").stdout)
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    assert [w["objectRef"]["name"] for w in writes_by_the_service_account(cluster, job)
            if w["objectRef"].get("resource") == "installations"] == ["default"]
    assert job.artifacts["calico_ebpf_install"]["variant"] == "Calico"

    # and back: the disable template brings kube-proxy back (its pods ready) before it switches to Iptables
    job = awx_job("playbooks/disable_ebpf.yml",
                  {"ebpf_rollback_platform": "kubeadm", "ebpf_rollback_wait": "false", "ebpf_rollback_timeout": 120},
                  inventory_vars={"kube_proxy_timeout": 120, "kube_proxy_poll_interval": 5})
    job.assert_successful()
    inst = json.loads(cluster.kubectl("get", "installation", "default", "-o", "json").stdout)
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables"
    ds = json.loads(cluster.kubectl("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json").stdout)
    assert "non-calico" not in (ds["spec"]["template"]["spec"].get("nodeSelector") or {})
    # Felix told to keep kube-proxy's rules first; with ebpf_rollback_wait false the role does not wait for calico-node
    # to leave eBPF, so the field stays false with its record (a run with the wait puts it back), and says so
    assert [(w["objectRef"]["resource"], w["objectRef"]["name"]) for w in writes_by_the_service_account(cluster, job)
            if w["verb"] == "patch" and "dryRun=" not in w.get("requestURI", "")] == [
        ("felixconfigurations", "default"), ("daemonsets", "kube-proxy"), ("installations", "default")]
    felix = json.loads(cluster.kubectl("get", "felixconfigurations.crd.projectcalico.org", "default", "-o",
                                       "json").stdout)
    assert felix["spec"]["bpfKubeProxyIptablesCleanupEnabled"] is False
    assert felix["metadata"]["annotations"]["calico-ops.io/kube-proxy-iptables-cleanup-before"] == "unset"
    assert "run this again with ebpf_rollback_wait true to restore it" in job.stdout
    summary = job.artifacts["calico_ebpf_rollback"]
    assert summary["rolled_back"] is True and summary["platform"] == "kubeadm", summary


def test_owner_references_job(cluster, awx_job):
    """Detach then attach on a cluster whose Calico objects own nothing: both runs report, and the record ConfigMap
    is written by the ServiceAccount. The detach records nothing, so the attach is told there may be nothing to
    attach (owner_references_require_record: an attach with no record fails by default)."""
    try:
        for state, answers in (("detached", {}), ("attached", {"owner_references_require_record": "false"})):
            job = awx_job("playbooks/owner_references.yml", dict({"owner_references_state": state,
                                                                 "owner_references_record_name": "awx-oref-record"},
                                                                **answers))
            job.assert_successful()
            summary = job.artifacts["calico_ops_owner_references"]
            assert summary["state"] == state and isinstance(summary["counts"], dict), summary
            assert summary["missing_owners"] == []
            assert "owner_references" in job.role_tasks()
    finally:
        cluster.kubectl("delete", "configmap", "-n", "kube-system", "-l", "calico-ops.io/record=awx-oref-record",
                        "--ignore-not-found", check=False)
        cluster.kubectl("delete", "configmap", "-n", "kube-system", "awx-oref-record", "--ignore-not-found",
                        check=False)


@pytest.fixture
def calico_host_endpoint_crds(cluster):
    """Every crd.projectcalico.org CRD of operator-crds.yaml (the real calico-kube-controllers needs them all)."""
    docs = calico_crd_docs(cluster.mirror_url)
    existing = set(cluster.kubectl("get", "crd", "-o", "name").stdout.split())
    cluster.apply(yaml.safe_dump_all(docs))
    names = [d["metadata"]["name"] for d in docs]
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", *["crd/" + n for n in names])
    yield
    cluster.kubectl("delete", "hostendpoints.crd.projectcalico.org,kubecontrollersconfigurations.crd.projectcalico.org",
                    "--all", "--ignore-not-found", check=False)
    new = [n for n in names if "customresourcedefinition.apiextensions.k8s.io/" + n not in existing]
    if new:
        # gone before the next test file applies the same CRDs (a release file does): a CRD deleted seconds after
        # it was created can stall until nudged (calico_support.nudge_crds)
        cluster.kubectl("delete", "crd", *new, "--ignore-not-found", "--wait=false", check=False, timeout=300)

        def gone():
            left = [n for n in new if cluster.kubectl("get", "crd", n, "--ignore-not-found", "-o", "name",
                                                      check=False).stdout.strip()]
            nudge_crds(cluster, left)
            return not left
        cluster.wait_for(gone, timeout=300, interval=1, what="the CRDs this test added to be gone")
    cluster.kubectl("delete", "configmap", "-n", "kube-system", "-l", "calico-ops.io/record",
                    "--ignore-not-found", check=False)


def test_migrate_host_endpoints_job(cluster, calico_host_endpoint_crds, awx_job):
    nodes = cluster.k8s.resources.get(api_version="v1", kind="Node").get().to_dict()["items"]
    node = nodes[0]["metadata"]["name"]
    heps = cluster.k8s.resources.get(api_version=CRD, kind="HostEndpoint")
    heps.create(body={"apiVersion": CRD, "kind": "HostEndpoint",
                      "metadata": {"name": "manual-" + node, "labels": {"awx-job": "migrated"}},
                      "spec": {"node": node, "interfaceName": "*", "expectedIPs": ["192.0.2.10"],
                               "profiles": ["manual-profile"]}})
    # the real calico-kube-controllers (tests/integration/kube_controllers.py) creates the automatic endpoints;
    # metrics off: its port 9094 is this machine's, another control plane's kube-controllers may hold it
    cluster.apply(yaml.safe_dump({
        "apiVersion": CRD, "kind": "KubeControllersConfiguration", "metadata": {"name": "default"},
        "spec": dict(METRICS_OFF, controllers={"node": {"hostEndpoint": {"autoCreate": "Disabled"}}})}))
    try:
        with KubeControllers(cluster):
            job = awx_job("playbooks/migrate_host_endpoints.yml",
                          {"host_endpoint_migration_state": "migrated", "host_endpoint_migration_wait_timeout": 120})
        job.assert_successful()
        summary = job.artifacts["calico_ops_host_endpoint_migration"]
        assert summary["state"] == "migrated" and summary["missing_nodes"] == [], summary
        names = {h["metadata"]["name"] for h in heps.get().to_dict()["items"]}
        assert "manual-" + node not in names and node + "-auto-hep" in names, names
        labels = cluster.k8s.resources.get(api_version="v1", kind="Node").get(name=node).to_dict()["metadata"]["labels"]
        assert labels.get("awx-job") == "migrated"
        deleted = [w["objectRef"]["name"] for w in writes_by_the_service_account(cluster, job) if w["verb"] == "delete"]
        assert deleted == ["manual-" + node]
    finally:
        delete_automatic_endpoints(cluster)
        cluster.kubectl("label", "node", node, "awx-job-", check=False)


def test_upgrade_job_on_a_cluster_without_calico(cluster, awx_job):
    """The upgrade template's job detects the install from the cluster and stops at its guard before any write
    when there is no Calico to upgrade."""
    wipe_calico(cluster)
    job = awx_job("playbooks/upgrade.yml", {"upgrade_target_version": "v3.31.4"})
    assert job.status == "failed" and job.rc != 0
    failed = [e["event_data"] for e in job.of("runner_on_failed") if not e["event_data"].get("ignore_errors")]
    # the guard's refusal, then the playbook's rescue failing with the same message - and no diagnostics archive:
    # a refusal before any write changed nothing (roles/diagnostics/tasks/on_failure.yml)
    assert [f.get("task") for f in failed][1:] == ["Fail as the job did, saying where the diagnostics archive is"], [
        f.get("task") for f in failed]
    assert failed[0]["res"]["msg"] in failed[1]["res"]["msg"]
    assert "diagnostics archive:" not in failed[1]["res"]["msg"]
    assert writes_by_the_service_account(cluster, job) == []
    assert cluster.audit.reads_since(job.mark, users=(SA_USER,))
    assert "upgrade" in job.role_tasks()


def test_upgrade_job_manifest_install(cluster, awx_job):
    """A manifest install of v3.29.7 (Kubernetes datastore) upgraded to v3.31.4 by the upgrade template's job."""
    wipe_calico(cluster)
    install = Install(cluster)
    install.configmaps.append(("kube-system", "calico-ops-upgrade"))
    try:
        install.apply_release("v3.29.7", "calico.yaml")
        install.forget_later("v3.31.4", "calico.yaml")
        wait_daemonset(cluster, "calico-node")
        with CalicoNodeStandIn(cluster) as node:
            cluster.wait_for(lambda: ((get(cluster, CRD, "ClusterInformation", "default") or {}).get("spec") or {})
                             .get("calicoVersion") == "v3.29.7", timeout=60, what="ClusterInformation at v3.29.7")
            job = awx_job("playbooks/upgrade.yml", {"upgrade_target_version": "v3.31.4", "upgrade_timeout": 180},
                          inventory_vars={"upgrade_poll_interval": 5})
            assert not node.errors, node.errors
        job.assert_successful()
        summary = job.artifacts["calico_ops_upgrade"]
        assert (summary["action"], summary["method"], summary["datastore"]) == ("upgrade", "manifest", "kubernetes"), \
            summary
        assert summary["version"] == "v3.31.4", summary
        ds = get(cluster, "apps/v1", "DaemonSet", "calico-node", "kube-system")
        assert image_tag(ds["spec"]["template"]["spec"]["containers"][0]["image"]) == "v3.31.4"
        assert get(cluster, CRD, "ClusterInformation", "default")["spec"]["calicoVersion"] == "v3.31.4"
        written = [(w["objectRef"].get("resource"), w["objectRef"].get("name"))
                   for w in writes_by_the_service_account(cluster, job)]
        assert ("daemonsets", "calico-node") in written, written
        assert job.stats["changed"].get("localhost", 0) > 0
    finally:
        install.cleanup()


def test_migrate_datastore_job(cluster, awx_job, credential, tmp_path):
    """The migration as an AWX job: calicoctl reaches the Kubernetes datastore with the credential's bearer token (no
    kubeconfig in the job), which is in no output and in no file once the job ends; the ServiceAccount of
    docs/rbac.yml does the writes."""
    from test_datastore_migration import Migration
    m = Migration(cluster, tmp_path).setup()
    try:
        with CalicoNodeStandIn(cluster) as node:
            cluster.wait_for(lambda: m.cluster_version() == "v3.31.4", timeout=60, interval=0.5,
                             what="calico-node's ClusterInformation in etcd")
            job = awx_job("playbooks/migrate_datastore.yml",
                          {"datastore_migration_calicoctl": m.calicoctl, "datastore_migration_timeout": 120},
                          inventory_vars={"datastore_migration_record_name": m.record,
                                          "datastore_migration_poll_interval": 5})
            job.assert_successful()
        assert not node.errors, node.errors
        assert m.node_env().get("DATASTORE_TYPE") == "kubernetes"
        assert m.record_data()["phase"] == "done" and not m.locked("kdd")
        writes = writes_by_the_service_account(cluster, job)
        assert any(w["objectRef"].get("resource") == "ippools" for w in writes), [w["objectRef"] for w in writes]
        assert job.artifacts["calico_datastore_migration"]["datastore"] == "kubernetes"
        # the token went into calicoctl's configuration for the run only: no file of the job's home holds it
        # (the fixture checked the job's output and events)
        left = [p for p in (Path(job.private_data_dir) / "home").rglob("*") if p.is_file()]
        assert any(p.name == "etcd-data" for p in left), left  # the export is kept
        assert not [p for p in left if credential["bearer_token"] in p.read_text(errors="replace")], left
    finally:
        m.cleanup()


def test_migrate_to_operator_job(cluster, awx_job):
    """A manifest install of v3.31.4 moved to the real operator by the job template, as the ServiceAccount of
    docs/rbac.yml (ClusterRole calico-ops-operator-migration): the operator installed, Installation default created,
    the manifest's leftovers removed."""
    wipe_calico(cluster)
    install = Install(cluster)
    install.configmaps.append(("kube-system", "calico-ops-operator-migration"))
    try:
        install.apply_release("v3.31.4", "calico.yaml")
        install.forget_later("v3.31.4", "tigera-operator.yaml")
        install.forget_later("v3.31.4", "operator-crds.yaml")
        wait_daemonset(cluster, "calico-node")
        # what calico-node creates when it starts (it cannot run here: it needs a kernel)
        cluster.apply(yaml.safe_dump_all([
            {"apiVersion": CRD, "kind": "FelixConfiguration", "metadata": {"name": "default"}, "spec": {}},
            {"apiVersion": CRD, "kind": "IPPool", "metadata": {"name": "default-ipv4-ippool"},
             "spec": {"cidr": "192.168.0.0/16", "ipipMode": "Always", "natOutgoing": True, "nodeSelector": "all()"}}]))
        job = awx_job("playbooks/migrate_to_operator.yml", {"operator_migration_timeout": 300},
                      inventory_vars={"operator_migration_manifest_url": cluster.mirror_url,
                                      "operator_migration_poll_interval": 5})
        job.assert_successful()
        assert get(cluster, "apps/v1", "DaemonSet", "calico-node", "kube-system") is None
        assert get(cluster, "apps/v1", "DaemonSet", "calico-node", "calico-system") is not None
        summary = job.artifacts["calico_operator_migration"]
        assert summary["phase"] == "done" and summary["manifest_calico_node"] in (False, "False"), summary
        written = {(w["objectRef"].get("resource"), w["objectRef"].get("name"))
                   for w in writes_by_the_service_account(cluster, job)}
        assert {("installations", "default"), ("deployments", "tigera-operator"),
                ("serviceaccounts", "calico-node")} <= written, written
    finally:
        install.cleanup()


def _fleet_inventory(credential, tmp_path, hosts):
    """A fleet inventory (inventories/fleet's shape): each host a cluster with its own K8S_AUTH_* values
    (calico_k8s_auth, as a vault would hold them), here every one this control plane under another name."""
    ca = tmp_path / "fleet-ca.crt"
    ca.write_text(credential["ssl_ca_cert"])
    ca.chmod(0o600)
    auth = {"K8S_AUTH_HOST": credential["host"], "K8S_AUTH_API_KEY": credential["bearer_token"],
            "K8S_AUTH_SSL_CA_CERT": str(ca), "K8S_AUTH_VERIFY_SSL": "true"}
    inv = {"all": {"children": {"calico_fleet": {
        "hosts": {h: {"calico_k8s_auth": auth} for h in hosts},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}
    return {"fleet.yml": yaml.safe_dump(inv)}


def test_fleet_rollout_workflow_jobs(cluster, kube_proxy_daemonset, credential, awx_job, tmp_path):
    """The fleet workflow's nodes (configure.yml: canary -> approval -> rest, a failure edge to the diagnostics
    template), each run as AWX runs it. The fleet's clusters carry their own K8S_AUTH_* values (no credential on
    the job): two hosts, both this control plane. The approval node is AWX's own (not run here)."""
    inventory = _fleet_inventory(credential, tmp_path, ["cluster-a", "cluster-b"])
    base = {"fleet_rollout_job": "install_ebpf", "fleet_rollout_gate_connectivity": "false",
            "fleet_rollout_gate_timeout": 120}
    install = {"ebpf_install_manifest_url": cluster.mirror_url, "ebpf_install_poll_interval": 5,
               "ebpf_install_platform": "kubeadm", "kube_proxy_timeout": 120, "kube_proxy_poll_interval": 5,
               "fleet_rollout_canary": ["cluster-a"], "fleet_rollout_summary_dir": str(tmp_path / "fleet-summary")}
    canary = awx_job("playbooks/fleet_rollout.yml", dict(base, fleet_rollout_scope="canary"),
                     inventory_vars=install, inventory_files=inventory, inject_credential=False)
    canary.assert_successful()
    summary = canary.artifacts["calico_fleet_rollout"]
    assert [(r["cluster"], r["status"]) for r in summary["clusters"]] == [("cluster-a", "ok")], summary
    assert canary.artifacts["calico_target"] == "localhost"  # no failed cluster for a failure edge
    inst = json.loads(cluster.kubectl("get", "installation", "default", "-o", "json").stdout)
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    assert writes_by_the_service_account(cluster, canary)  # the cluster's own settings: the ServiceAccount's token

    rest = awx_job("playbooks/fleet_rollout.yml", dict(base, fleet_rollout_scope="rest"),
                   inventory_vars=install, inventory_files=inventory, inject_credential=False,
                   artifacts=canary.artifacts)
    rest.assert_successful()
    summary = rest.artifacts["calico_fleet_rollout"]
    assert [(r["cluster"], r["status"]) for r in summary["clusters"]] == [("cluster-b", "already done")], summary
    assert writes_by_the_service_account(cluster, rest) == []

    # a canary that fails its gate (a TigeraStatus component that never reports): the run fails, publishes the
    # failed cluster as calico_target, and the failure edge's diagnostics job collects that cluster's archive
    failing = awx_job("playbooks/fleet_rollout.yml", dict(base, fleet_rollout_scope="canary", fleet_rollout_gate_timeout=10),
                      inventory_vars=dict(install, fleet_rollout_tigerastatus=["calico", "never-reported"]),
                      inventory_files=inventory, inject_credential=False)
    assert failing.status == "failed", failing.stdout[-3000:]
    row = failing.artifacts["calico_fleet_rollout"]["clusters"][0]
    assert row["status"] == "failed" and "never-reported" in row["gate"], row
    assert failing.artifacts["calico_target"] == "cluster-a"
    diag = awx_job("playbooks/collect_diagnostics.yml", {"diagnostics_dir": str(tmp_path / "diag")},
                   inventory_files=inventory, inject_credential=False,
                   artifacts={"calico_target": failing.artifacts["calico_target"]})
    diag.assert_successful()
    assert list((tmp_path / "diag").glob("*.tar.gz")), diag.stdout[-3000:]
    # the failed canary's own archive, and the summaries, where the rollout was told to write them
    assert (tmp_path / "fleet-summary" / "diagnostics-cluster-a.tar.gz").is_file()
    assert json.loads((tmp_path / "fleet-summary" / "fleet-rollout-install_ebpf.json").read_text())["clusters"]
    for job in (canary, rest, failing, diag):
        assert credential["bearer_token"] not in job.stdout and credential["bearer_token"] not in json.dumps(job.events)
