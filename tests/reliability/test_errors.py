"""Every module's failure is one line naming the object, the API's status and reason, and what to do: never a
traceback, never a local path of credentials, never a response body.

Each module (plugins/modules/*.py) runs against four failures of a real control plane:

* ``stopped``: a kubeconfig whose server is a closed local port (the API server stopped);
* ``kubeconfig``: a kubeconfig the kubernetes client cannot load (no current-context: its error names the file);
* ``403``: a kubeconfig with the token of a ServiceAccount bound to no role;
* ``404``: an object (or namespace) that does not exist, where the module reads or writes one;
* ``409``: a conflict, where the module can meet one (a field owned by another field manager, a stale
  resourceVersion).

One ansible-playbook per scenario (``-vvv``; the five run at once), one task per module (``ignore_errors``, ``register``), the registered
results dumped as JSON; and each result's shape is checked: failed, ``msg`` one line naming the object and the
status/reason, no traceback anywhere in the run's output, no ``exception`` detail (ansible-core 2.19 puts its own
placeholder ``(traceback unavailable)`` in every failed result, ansible.builtin's too: that is all it may hold),
no path of the scenario's kubeconfig, no Secret data. Where a module cannot meet a scenario the table says why.
"""

import json
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from reliability_support import kubeconfig_with
from test_host_endpoint_migration import apply_crds, delete_crds

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
SECRET_VALUE = "errors-sentinel-" + uuid.uuid4().hex[:8]  # in a Secret a 409/422 body could echo

# module -> its minimal arguments (``NS`` is the test's namespace, ``TMP`` its directory)
BASE = {
    "calico_facts": {},
    "calico_health_info": {"calico_node_namespace": "NS", "job": "enable_ebpf"},
    "calico_rollout_info": {"namespace": "NS", "daemonset": "calico-node"},
    # the plan reads the nodes first (the probe workload's namespace need not exist)
    "connectivity_info": {"stage": "plan", "namespace": "cx-probe"},
    "controller_files": {"files": [{"path": "TMP/written.txt", "content": "x"}]},
    "custom_resources": {"src": "TMP/custom-resources.yaml", "dest": "TMP/out-cr.yaml"},
    # calicoctl is never reached: the first read is calico-node's DaemonSet
    "datastore_migration_info": {"calicoctl": "TMP/calicoctl", "etcd_config": "TMP/calicoctl-etcd.cfg",
                                 "namespace": "NS"},
    "diagnostics_archive": {"path": "TMP/diag.tar.gz", "namespaces": ["NS"]},
    "ebpf_host_preflight_info": {},
    "ebpf_preflight_info": {},
    "field_ownership": {"objects": [{"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"namespace": "NS", "name": "owned"}}],
                        "from_managers": ["kubectl-client-side-apply"]},
    "host_endpoint_migration": {"state": "migrated", "record_namespace": "NS", "record_name": "hep-record",
                                "record_path": "TMP/hep-record.json", "wait_timeout": 5},
    "kube_proxy_info": {"namespace": "NS"},
    "manifest_apply": {"definition": {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "applied", "namespace": "NS"}, "data": {"a": "b"}}},
    "merge_patch": {"api_version": "v1", "resource": "configmaps", "namespace": "NS", "name": "owned",
                    "patch": {"data": {"key": "value"}}},
    # the first read is calico-node's DaemonSet (the release manifest is needed only once it exists)
    "operator_migration_info": {"namespace": "NS"},
    "objects_info": {"objects": [{"api_version": "v1", "kind": "ConfigMap", "namespace": "NS", "name": "owned"}]},
    "owner_references": {"state": "detached", "record_namespace": "NS", "record_name": "or-record",
                         "record_path": "TMP/or-record.json", "owner_api_versions": ["crd.projectcalico.org/v1"]},
    "record_location_info": {"namespace": "NS", "name": "rl-record"},
    "services_endpoint_info": {"namespace": "NS", "endpoint_host": "api.example.com", "endpoint_port": 6443},
    "tigerastatus_info": {},
    "upgrade_manifest": {"src": "TMP/calico.yaml", "dest": "TMP/out-upgrade.yaml"},
}

# scenario -> module -> (extra arguments, what the message must name[, what it must say instead of the status]) or a
# string: why the module cannot meet the scenario.
FILE_ONLY = "file-only module: it never talks to the API server"
SCENARIOS = {
    "stopped": {
        "calico_facts": ({}, "the Calico install"),
        "calico_health_info": ({}, "reading the cluster: the API server"),  # a verdict (VERDICTS)
        "calico_rollout_info": ({}, "daemonsets.apps NS/calico-node"),
        "connectivity_info": ({}, "the connectivity check in namespace cx-probe"),  # the subject of first contact
        "controller_files": FILE_ONLY,
        "custom_resources": FILE_ONLY,
        "datastore_migration_info": ({}, "daemonsets.apps NS/calico-node"),
        "diagnostics_archive": ({}, "TMP/diag.tar.gz"),
        "ebpf_host_preflight_info": FILE_ONLY,
        "ebpf_preflight_info": ({}, "nodes"),
        "field_ownership": ({}, "ConfigMap NS/owned"),
        "host_endpoint_migration": ({}, "configmaps NS/hep-record"),
        "kube_proxy_info": ({}, "daemonsets.apps NS/kube-proxy"),
        "manifest_apply": ({}, "ConfigMap NS/applied"),
        "merge_patch": ({}, "configmaps NS/owned"),
        "operator_migration_info": ({}, "daemonsets.apps NS/calico-node"),
        "objects_info": ({}, "ConfigMap NS/owned"),
        "owner_references": ({}, "configmaps NS/or-record"),
        "record_location_info": ({}, "NS/rl-record"),
        "services_endpoint_info": ({}, "configmaps NS/kubernetes-services-endpoint"),
        "tigerastatus_info": ({}, "tigerastatuses.operator.tigera.io"),
        "upgrade_manifest": FILE_ONLY,
    },
    "403": {
        "calico_facts": ({}, "secrets in namespace tigera-operator"),  # its first read: Helm's release Secrets
        "calico_health_info": ({}, "tigerastatuses.operator.tigera.io"),  # its first check; a verdict (VERDICTS)
        "calico_rollout_info": ({}, "daemonsets.apps NS/calico-node"),
        "connectivity_info": ({}, "nodes"),
        "controller_files": FILE_ONLY,
        "custom_resources": FILE_ONLY,
        "datastore_migration_info": ({}, "daemonsets.apps NS/calico-node"),
        "diagnostics_archive": "collected when something is already wrong: a read it may not make is written down in "
                               "the archive (summary.json, problems), not a failure",
        "ebpf_host_preflight_info": FILE_ONLY,
        "ebpf_preflight_info": ({}, "nodes"),
        "field_ownership": ({}, "configmaps NS/owned"),
        "host_endpoint_migration": ({}, "hostendpoints.crd.projectcalico.org"),
        "kube_proxy_info": ({}, "nodes"),  # its first read: the nodes (platform, selector)
        "manifest_apply": ({}, "configmaps NS/applied"),
        "merge_patch": ({}, "configmaps NS/owned"),
        "operator_migration_info": ({}, "daemonsets.apps NS/calico-node"),
        "objects_info": ({}, "configmaps NS/owned"),  # discovery is open to every authenticated user: the GET
        "owner_references": ({}, "v1/configmaps"),  # every type it cannot list, with the statuses
        "record_location_info": ({}, "ConfigMap NS/rl-record"),  # the dry run of the record's write, refused
        "services_endpoint_info": ({}, "nodes"),  # its first read: the nodes (platform)
        "tigerastatus_info": ({}, "tigerastatuses.operator.tigera.io"),
        "upgrade_manifest": FILE_ONLY,
    },
    "404": {
        "calico_facts": "reads only, and a missing object is a fact (method none, not installed), not a failure",
        "calico_health_info": "a missing TigeraStatus, DaemonSet or Installation is a problem of the verdict "
                              "(passed: false), not a failure",
        "calico_rollout_info": "a missing DaemonSet is reported (ready: false, problems), not a failure",
        "connectivity_info": "reads only: a missing namespace, Service, Installation or kube-proxy is a finding (what "
                             "is deployed, skipped rows), not a failure",
        "controller_files": FILE_ONLY,
        "custom_resources": ({"src": "TMP/missing.yaml"}, "TMP/missing.yaml", "cannot read"),  # a file's 404
        "datastore_migration_info": "reads only: a missing calico-node, CRD or record is a finding (plan refuse, "
                                    "held nothing, no record), not a failure",
        "diagnostics_archive": "reads only: a missing object, type or namespace is written down in the archive, not "
                               "a failure",
        "ebpf_host_preflight_info": FILE_ONLY,
        "ebpf_preflight_info": "lists nodes and kube-system objects: no object it needs by name",
        "field_ownership": "an absent object has nothing to hand over: counted absent, not a failure",
        # its record is written only once there is something to migrate: its namespace is never reached here
        "host_endpoint_migration": "writes its record only before a migration step: with nothing to migrate (no "
                                   "old HostEndpoints) it reads and writes no named object",
        "kube_proxy_info": "a missing DaemonSet is reported (present: false): what state disabled wants",
        "manifest_apply": ({"definition": {"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": "applied", "namespace": "absent-ns"}}},
                           "ConfigMap absent-ns/applied"),
        "merge_patch": ({"name": "absent"}, "configmaps NS/absent"),
        "operator_migration_info": "reads only: a missing calico-node, operator, Installation or record is a finding "
                                   "(plan refuse or nothing), not a failure",
        "objects_info": "a missing object is reported (found: false), a type not served too (served: false)",
        # the record location is proven before anything else (issue 36): a namespace that does not exist is named
        "owner_references": ({"state": "attached", "record_namespace": "absent-ns"}, "absent-ns/or-record"),
        "record_location_info": ({"namespace": "absent-ns"}, "absent-ns/rl-record"),
        "services_endpoint_info": "reads only: a missing namespace, ConfigMap or operator is reported, not a failure",
        "tigerastatus_info": "a missing TigeraStatus (or its CRD) is reported (installed: false), not a failure",
        "upgrade_manifest": ({"src": "TMP/missing.yaml"}, "TMP/missing.yaml", "cannot read"),  # a file's 404
    },
    "409": {
        "calico_facts": "reads only: a read never conflicts",
        "calico_health_info": "reads only: a read never conflicts",
        "calico_rollout_info": "reads only: a read never conflicts",
        "connectivity_info": "reads only: a read never conflicts",
        "controller_files": FILE_ONLY,
        "custom_resources": FILE_ONLY,
        "datastore_migration_info": "reads only: a read never conflicts",
        "diagnostics_archive": "reads only: a read never conflicts",
        "ebpf_host_preflight_info": FILE_ONLY,
        "ebpf_preflight_info": "reads only: a read never conflicts",
        "field_ownership": "a 409 (managedFields changed meanwhile) is read again and retried, by design",
        "host_endpoint_migration": "a 409 on its record or a node's labels is read again and retried, by design",
        "kube_proxy_info": "reads only: a read never conflicts",
        # another field manager owns data.a of ConfigMap "owned": without force, server-side apply conflicts
        "manifest_apply": ({"force_conflicts": False, "definition": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned", "namespace": "NS"},
            "data": {"a": "mine"}}}, "ConfigMap NS/owned"),
        # a patch holding a stale metadata.resourceVersion (the caller's own optimistic lock)
        "merge_patch": ({"patch": {"metadata": {"resourceVersion": "1"}, "data": {"a": "x"}}},
                        "configmaps NS/owned"),
        "operator_migration_info": "reads only: a read never conflicts",
        "objects_info": "reads only: a read never conflicts",
        "owner_references": "a 409 on its record or a dependent's ownerReferences is read again and retried, by design",
        "record_location_info": "dry runs only: a dry-run apply with force, or a create whose 409 proves the right",
        "services_endpoint_info": "reads only: a read never conflicts",
        "tigerastatus_info": "reads only: a read never conflicts",
        "upgrade_manifest": FILE_ONLY,
    },
}
# a kubeconfig the kubernetes client cannot load (no current-context; its error names the file): every K8s module
# builds its client in one place (K8sModule._build: client() and server_url()), so three modules stand for all:
# merge_patch (client()), kube_proxy_info and services_endpoint_info (server_url() first)
SAME_BUILD = "builds its client as merge_patch does (K8sModule.client): the stopped scenario covers its naming"
SCENARIOS["kubeconfig"] = dict(
    (m, SCENARIOS["stopped"][m] if m in ("merge_patch", "kube_proxy_info", "services_endpoint_info")
     or isinstance(SCENARIOS["stopped"][m], str) else SAME_BUILD) for m in MODULES)
# gates: a cluster they cannot read is a verdict that did not pass (passed: false), its ``line`` held to what a
# failure's ``msg`` is (the fleet rollout reads the verdict and fails the cluster quoting the line)
VERDICTS = ("calico_health_info",)
STATUS_WORDS = {"stopped": "was not reached (connection refused)",
                "kubeconfig": "cannot load the Kubernetes configuration (", "403": "403 Forbidden", "404": "404 Not Found",
                "409": "409 Conflict"}


def test_every_module_is_in_every_scenario():
    for scenario, table in SCENARIOS.items():
        assert sorted(table) == MODULES, scenario


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _subst(value, ns, tmp):
    if isinstance(value, dict):
        return dict((k, _subst(v, ns, tmp)) for k, v in value.items())
    if isinstance(value, list):
        return [_subst(v, ns, tmp) for v in value]
    if isinstance(value, str):
        return value.replace("NS", ns).replace("TMP", str(tmp))
    return value


def play(scenario, ns, tmp):
    tasks = []
    for module in MODULES:
        case = SCENARIOS[scenario][module]
        if isinstance(case, str):
            continue
        args = dict(BASE[module])
        args.update(case[0])
        tasks.append({"name": module, "calico_ops.lifecycle." + module: _subst(args, ns, tmp),
                      "register": "r_" + module, "ignore_errors": True})
    dump = "{%s}" % ", ".join("'r_%s': r_%s" % (t["name"], t["name"]) for t in tasks)
    tasks.append({"name": "dump", "ansible.builtin.copy": {"dest": str(tmp / ("results-%s.json" % scenario)),
                                                            "content": "{{ %s | to_json }}" % dump}})
    return [{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]


def start_scenario(cluster, scenario, kubeconfig, ns, tmp):
    """ansible-playbook -vvv of the scenario's play, started (the five run at once)."""
    path = tmp / ("play-%s.yml" % scenario)
    path.write_text(yaml.safe_dump(play(scenario, ns, tmp), sort_keys=False))
    env = dict(cluster.env)
    for key in ("KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_CONTEXT"):
        env.pop(key, None)
    env.update({"K8S_AUTH_KUBECONFIG": kubeconfig, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0",
                "HOME": str(tmp)})
    return subprocess.Popen([str(Path(sys.executable).parent / "ansible-playbook"), str(path), "-i", "localhost,",
                             "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable, "-vvv"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp))


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory):
    """The objects the scenarios meet, one kubeconfig per scenario, and the five playbooks run at once:
    scenario -> (stdout + stderr, registered results, seconds). Objects: ConfigMap ``owned`` (data.a owned by the
    field manager ``other``), a Secret holding SECRET_VALUE, Calico's CRDs (host_endpoint_migration needs
    HostEndpoints served to get to its first request), the files the file-only modules read."""
    tmp = tmp_path_factory.mktemp("errors")
    ns = "t-errors-" + uuid.uuid4().hex[:6]
    cluster.kubectl("create", "namespace", ns)
    created = apply_crds(cluster)
    try:
        cluster.kubectl("apply", "--server-side", "--field-manager=other", "-f", "-", input=yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned", "namespace": ns},
             "data": {"a": "theirs"}}))
        cluster.kubectl("create", "secret", "generic", "held", "-n", ns, "--from-literal=key=" + SECRET_VALUE)
        (tmp / "custom-resources.yaml").write_text(yaml.safe_dump(
            {"apiVersion": "operator.tigera.io/v1", "kind": "Installation", "metadata": {"name": "default"},
             "spec": {}}))
        (tmp / "calico.yaml").write_text(yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "calico-config", "namespace": "kube-system"},
             "data": {"calico_backend": "bird"}}))
        configs = tmp / "credentials"
        configs.mkdir()
        sa = "no-rbac-" + uuid.uuid4().hex[:5]
        cluster.kubectl("create", "serviceaccount", sa, "-n", ns)
        token = cluster.kubectl("create", "token", sa, "-n", ns, "--duration=30m").stdout.strip()
        kubeconfigs = {
            "stopped": kubeconfig_with(cluster, configs / "stopped.kubeconfig",
                                       server="https://127.0.0.1:%d" % closed_port()),
            "403": kubeconfig_with(cluster, configs / "no-rbac.kubeconfig", token=token),
            "kubeconfig": kubeconfig_with(cluster, configs / "no-context.kubeconfig"),
            "404": kubeconfig_with(cluster, configs / "admin-404.kubeconfig"),
            "409": kubeconfig_with(cluster, configs / "admin-409.kubeconfig"),
        }
        cfg = yaml.safe_load(Path(kubeconfigs["kubeconfig"]).read_text())
        del cfg["current-context"]
        Path(kubeconfigs["kubeconfig"]).write_text(yaml.safe_dump(cfg))
        started = time.time()
        procs = dict((s, start_scenario(cluster, s, kubeconfigs[s], ns, tmp)) for s in sorted(SCENARIOS))
        out = {}
        for scenario, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=300)
            (tmp / ("output-%s.txt" % scenario)).write_text(stdout + stderr)
            results_file = tmp / ("results-%s.json" % scenario)
            assert results_file.exists(), stdout[-3000:] + stderr[-3000:]
            out[scenario] = (stdout + stderr, json.loads(results_file.read_text()), time.time() - started)
        yield {"ns": ns, "tmp": tmp, "configs": configs, "runs": out}
    finally:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        delete_crds(cluster, created)


def shape_problems(module, result, expect, words, ns, tmp, configs):
    """What is wrong with one module's failed result (empty: nothing)."""
    problems = []
    text = json.dumps(result)
    msg = result.get("line") if module in VERDICTS else result.get("msg")
    if module in VERDICTS and (result.get("failed") or result.get("passed") is not False):
        return ["not a verdict that did not pass: %s" % text[:600]]
    if module not in VERDICTS and not result.get("failed"):
        return ["did not fail: %s" % text[:600]]
    if not isinstance(msg, str) or not msg.strip():
        return ["no msg: %s" % text[:600]]
    if "\n" in msg:
        problems.append("msg is not one line: %r" % msg[:600])
    if "Traceback" in text or 'File "' in text:
        problems.append("a traceback: %s" % text[:600])
    if result.get("exception") not in (None, "(traceback unavailable)"):
        problems.append("an exception detail: %r" % str(result.get("exception"))[:300])
    if str(configs) in text or ".kubeconfig" in text:
        problems.append("a kubeconfig path: %r" % msg)
    if SECRET_VALUE in text:
        problems.append("Secret data")
    if words not in msg:
        problems.append("msg does not say %r: %r" % (words, msg))
    if expect and _subst(expect, ns, tmp) not in msg:
        problems.append("msg does not name %r: %r" % (_subst(expect, ns, tmp), msg))
    return problems


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_module_fails_in_one_clear_line(runs, scenario):
    output, results, seconds = runs["runs"][scenario]
    ns, tmp, configs = runs["ns"], runs["tmp"], runs["configs"]
    problems = []
    for module in MODULES:
        case = SCENARIOS[scenario][module]
        if isinstance(case, str):
            continue
        words = case[2] if len(case) > 2 else STATUS_WORDS[scenario]
        for problem in shape_problems(module, results["r_" + module], case[1], words, ns, tmp, configs):
            problems.append("%s: %s" % (module, problem))
    if "Traceback (most recent call last)" in output:
        problems.append("a traceback in the -vvv output")
    if str(configs) in output:
        problems.append("a kubeconfig path in the -vvv output")
    if SECRET_VALUE in output:
        problems.append("Secret data in the -vvv output")
    assert problems == [], "\n".join(problems)
    print("%s: the playbooks ended %ds after they started" % (scenario, seconds))  # about 80s on an idle machine
