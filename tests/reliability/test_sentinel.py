"""Sentinels: one unique value planted in every secret-bearing input - the image pull secret, the licence, the
etcd client key, certificate and CA, a bearer token given as K8S_AUTH_API_KEY, a Secret in a manifest given to
manifest_apply (data and stringData), a Secret patched (new data in the patch itself) and created by merge_patch, a
Secret dependent of an owner
whose references owner_references detaches and attaches again - and none of them may appear in anything the
collection shows or writes, in plain text, base64 or JSON-escaped (``test_secrets.forms``):

* every module of the collection, batched in one playbook, run three times: ``--diff -vvvv`` (writes), then side by
  side ``--check --diff -vvvv`` (the modules that write; those that only read do the same in check mode) and a
  forced error run (a document the module refuses, a patch the API server rejects - its 422 quotes the Secret -, a
  manifest without the etcd Secret, and for owner_references and the modules that only read the API server not
  reached or a bearer token it refuses);
* the search fails when a redaction is removed (``test_the_sentinel_search_fails_when_a_redaction_is_removed``): each
  redaction of the collection is cut out of a copy of it in turn (the module base's exits, Secret data in objects,
  LicenseKey fields, merge_patch's Secret parts, Secrets quoted by API errors, the documents of upgrade_manifest, and
  the known values of secret options under the others), and the same search finds the secret it protects;
* every playbook (``playbooks/*.yml``, not ``playbooks/awx``) in ``--check --diff -vvvv`` with every secret input
  given and the bearer token (``test_secrets.py`` runs install_ebpf and upgrade for real, ``--diff -vvvv``, with
  the same search).

Searched: stdout (the ansible.posix.json callback's JSON, each task's result, which is also what ``register``
keeps - with only its ``invocation`` key removed: that is Ansible's echo of the task's arguments, the user's own
input - and a last task printing every registered result) and whatever stdout holds besides the JSON (the -vvvv
lines), stderr, every file under the run's working directory, HOME, artifacts, reports and records, and the
record ConfigMaps. Every file written must be 0600 (but Ansible's own under HOME/.ansible).

Seen failing on the code before the redaction (issue 18): manifest_apply (results and diff: the Secret's data and
stringData, the pull secret; in check mode the licence's token and certificate), merge_patch (the whole Secret it
patched or created, the dependent Secret), upgrade_manifest (the etcd key, cert and CA base64-encoded in the
documents), the registered results of all of these, and in the error run merge_patch's message (the API server's
422 quotes the whole Secret). ``tests/unit/plugins/module_utils/k8s/test_redact.py`` pins each piece of the redactor.
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from localcp.mirror import REPO_ROOT
from test_install_ebpf import enterprise_site  # noqa: F401 - a fixture
from test_secrets import files_under, leaks

pytestmark = pytest.mark.integration

PLAYBOOKS = sorted(p.name for p in (REPO_ROOT / "playbooks").glob("*.yml"))
OWNER_GROUP = "sentinel.calico-ops.test"
OWNER_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "owners.%s" % OWNER_GROUP},
    "spec": {"group": OWNER_GROUP, "scope": "Namespaced",
             "names": {"plural": "owners", "singular": "owner", "kind": "Owner", "listKind": "OwnerList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}

# An etcd-flavor manifest as small as upgrade_manifest accepts: the ConfigMap with etcd_endpoints, the Secret
# calico-etcd-secrets, a DaemonSet.
ETCD_MANIFEST = """\
# a test copy of calico-etcd.yaml's shape
apiVersion: v1
kind: Secret
type: Opaque
metadata:
  name: calico-etcd-secrets
  namespace: kube-system
data: {}
---
kind: ConfigMap
apiVersion: v1
metadata:
  name: calico-config
  namespace: kube-system
data:
  etcd_endpoints: "http://<ETCD_IP>:<ETCD_PORT>"
  etcd_ca: ""
  etcd_cert: ""
  etcd_key: ""
---
kind: DaemonSet
apiVersion: apps/v1
metadata:
  name: calico-node
  namespace: kube-system
spec:
  selector: {matchLabels: {k8s-app: calico-node}}
  template:
    metadata: {labels: {k8s-app: calico-node}}
    spec:
      containers:
        - name: calico-node
          image: docker.io/calico/node:v3.31.4
"""


def _pem(kind, label):
    return "-----BEGIN %s-----\n%s-%s\n-----END %s-----" % (kind, label, uuid.uuid4().hex + uuid.uuid4().hex, kind)


def plant():
    """One unique value per secret-bearing input (name -> value)."""
    def s(label):
        return "sentinel-%s-%s" % (label, uuid.uuid4().hex + uuid.uuid4().hex)
    pull_token = s("pull")
    return {
        "pull secret token": pull_token,
        "pull secret": json.dumps({"auths": {"quay.io": {
            "auth": base64.b64encode(("robot:" + pull_token).encode()).decode()}}}),
        "license token": s("license"),
        "license certificate": _pem("CERTIFICATE", "license-cert"),
        "etcd key": _pem("PRIVATE KEY", "etcd-key"),
        "etcd cert": _pem("CERTIFICATE", "etcd-cert"),
        "etcd ca": _pem("CERTIFICATE", "etcd-ca"),
        "manifest Secret data": s("manifest-data"),
        "manifest Secret stringData": s("manifest-stringdata"),
        "merge_patch Secret": s("merge-patch"),
        "merge_patch Secret patch": s("merge-patch-data"),
        "owner_references Secret dependent": s("dependent"),
        "bad token": s("bad-token"),
        "pod environment token": s("pod-env-token"),
    }


def strip_invocation(value):
    """A task result without Ansible's echo of the task's arguments (``invocation``, also in each loop item)."""
    if isinstance(value, dict):
        return dict((k, strip_invocation(v)) for k, v in value.items() if k != "invocation")
    if isinstance(value, list):
        return [strip_invocation(v) for v in value]
    return value


def channels(name, proc):
    """(where, text) of one ansible-playbook run: the JSON callback's output (invocation removed), what stdout
    holds besides it, and stderr."""
    out = proc.stdout
    start = out.find("{\n")
    data, rest = None, out
    if start >= 0:
        try:
            data = json.loads(out[start:])
            rest = out[:start]
        except ValueError:
            data = None
    found = [("%s: stdout (besides the JSON)" % name, rest), ("%s: stderr" % name, proc.stderr)]
    if data is None:
        found.append(("%s: stdout (not JSON)" % name, out))
        return found, {}
    for play in data.get("plays", []):
        for task in play.get("tasks", []):
            for host, res in task.get("hosts", {}).items():
                found.append(("%s: result of %r (%s)" % (name, task["task"]["name"], host),
                              json.dumps(strip_invocation(res))))
    found.append(("%s: JSON callback (besides task results)" % name,
                  json.dumps(dict((k, v) for k, v in data.items() if k != "plays"))))
    return found, data


def run_playbook(path, workdir, env, extra_vars, args=()):
    workdir = Path(workdir)
    vars_file = workdir.parent / ("%s-vars.json" % workdir.name)  # the test's input, outside the searched tree
    vars_file.write_text(json.dumps(extra_vars))
    run_env = dict(env)
    run_env.update({"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_NOCOLOR": "1",
                    "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
                    "ANSIBLE_RETRY_FILES_ENABLED": "0", "HOME": str(workdir / "home"), "PWD": str(workdir),
                    "ANSIBLE_COLLECTIONS_PATH": env["ANSIBLE_COLLECTIONS_PATH"]})
    (workdir / "home").mkdir(parents=True, exist_ok=True)
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), str(path), "-i",
           str(REPO_ROOT / "inventories" / "local" / "hosts.yml"), "-e", "@%s" % vars_file] + list(args)
    proc = subprocess.run(cmd, env=run_env, cwd=str(workdir), capture_output=True, text=True, timeout=600,
                          check=False)
    # kept beside the searched tree, for a reader of a failure
    (workdir.parent / ("%s-stdout.json" % workdir.name)).write_text(proc.stdout)
    (workdir.parent / ("%s-stderr.txt" % workdir.name)).write_text(proc.stderr)
    return proc


def token_env(cluster, token, ca, server=None):
    env = dict(cluster.env)
    for key in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT"):
        env.pop(key, None)  # only the token authenticates
    env.update({"K8S_AUTH_HOST": server or cluster.server, "K8S_AUTH_API_KEY": token, "K8S_AUTH_SSL_CA_CERT": ca})
    return env


@pytest.fixture
def world(cluster, namespace, tmp_path):
    """The planted values, the cluster objects that hold some of them, and a cluster-admin bearer token (itself
    a sentinel: it is a secret the collection is given)."""
    secrets = plant()
    cluster.apply(yaml.safe_dump(OWNER_CRD))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/owners.%s" % OWNER_GROUP)
    owner = json.loads(cluster.kubectl("create", "-o", "json", "-f", "-", input=json.dumps({
        "apiVersion": "%s/v1" % OWNER_GROUP, "kind": "Owner",
        "metadata": {"name": "owner", "namespace": namespace}})).stdout)
    cluster.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "dependent", "namespace": namespace,
            "ownerReferences": [{"apiVersion": "%s/v1" % OWNER_GROUP, "kind": "Owner", "name": "owner",
                                 "uid": owner["metadata"]["uid"]}]},
        "stringData": {"token": secrets["owner_references Secret dependent"]}}))
    # a pod whose container has a credential in its environment (a literal value): diagnostics_archive lists the
    # namespace's pods into its archive, and must mask it
    cluster.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "holds-a-token", "namespace": namespace},
        "spec": {"containers": [{
            "name": "app", "image": "registry.k8s.io/pause:3.10",
            "env": [{"name": "APP_API_TOKEN", "value": secrets["pod environment token"]}]}]}}))
    sa = "sentinel-%s" % uuid.uuid4().hex[:6]
    cluster.kubectl("-n", namespace, "create", "serviceaccount", sa)
    cluster.kubectl("create", "clusterrolebinding", sa, "--clusterrole=cluster-admin",
                    "--serviceaccount=%s:%s" % (namespace, sa))
    secrets["bearer token"] = cluster.kubectl("-n", namespace, "create", "token", sa,
                                              "--duration=30m").stdout.strip()
    cfg = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    ca = inputs / "ca.crt"
    ca.write_bytes(base64.b64decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"]))
    (inputs / "pull-secret.json").write_text(secrets["pull secret"])
    (inputs / "license.yaml").write_text(yaml.safe_dump({
        "apiVersion": "projectcalico.org/v3", "kind": "LicenseKey", "metadata": {"name": "default"},
        "spec": {"token": secrets["license token"], "certificate": secrets["license certificate"]}}))
    yield {"secrets": secrets, "namespace": namespace, "inputs": inputs, "ca": str(ca)}
    cluster.kubectl("delete", "clusterrolebinding", sa, "--ignore-not-found", check=False)
    cluster.kubectl("delete", "owners.%s" % OWNER_GROUP, "--all", "-A", "--ignore-not-found", "--wait=false",
                    check=False)


def modules_play(w, workdir, error=False, readers=True):
    """One play calling every module with the planted values (``error``: each on a path where it fails;
    ``readers``: with the modules that only read, which do the same in check mode)."""
    ns, s = w["namespace"], w["secrets"]
    b64 = lambda v: base64.b64encode(v.encode()).decode()  # noqa: E731
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": "from-manifest", "namespace": ns},
              "data": {"token": b64(s["manifest Secret data"])},
              "stringData": {"password": s["manifest Secret stringData"]}}
    if error:
        secret["metadata"] = {"namespace": ns}  # no name: refused before any request
    license_doc = yaml.safe_load((w["inputs"] / "license.yaml").read_text())
    tasks = [
        {"name": "manifest_apply: a Secret (data and stringData) and a ConfigMap",
         "calico_ops.lifecycle.manifest_apply": {
             "definition": [secret, {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "beside", "namespace": ns}, "data": {"a": "b"}}]}},
        {"name": "manifest_apply: the pull secret, as the role builds it",
         "calico_ops.lifecycle.manifest_apply": {"definition": {
             "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
             "metadata": {"name": "pull" if not error else "Pull_Secret", "namespace": ns},
             "data": {".dockerconfigjson": b64(s["pull secret"])}}}},
        {"name": "manifest_apply: the licence (a type the cluster does not serve: an error)",
         "calico_ops.lifecycle.manifest_apply": {"definition": license_doc, "wait_timeout": 2}},
        {"name": "merge_patch: label a Secret",
         "calico_ops.lifecycle.merge_patch": {
             "api_version": "v1", "resource": "secrets", "namespace": ns, "name": "patched",
             "missing": "create", "create": {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                             "data": {"token": b64(s["merge_patch Secret"])}},
             "patch": ({"metadata": {"labels": {"sentinel": "yes"}}} if not error
                       else {"data": {"token": "not base64 %s" % s["merge_patch Secret"]}})}},
        {"name": "merge_patch: new data in a Secret (the patch itself carries it)",
         "calico_ops.lifecycle.merge_patch": {
             "api_version": "v1", "resource": "secrets", "namespace": ns, "name": "patched",
             "missing": "create", "create": {"apiVersion": "v1", "kind": "Secret", "type": "Opaque"},
             "patch": {"data": {"rotated": b64(s["merge_patch Secret patch"])}}}},
        {"name": "merge_patch: the dependent Secret of owner_references",
         "calico_ops.lifecycle.merge_patch": {
             "api_version": "v1", "resource": "secrets", "namespace": ns, "name": "dependent",
             "patch": {"metadata": {"annotations": {"sentinel": "yes"}}}}},
        {"name": "field_ownership: the Secrets",
         "calico_ops.lifecycle.field_ownership": {
             "objects": [secret], "from_managers": ["kubectl-create", "kubectl-client-side-apply"]}},
        {"name": "upgrade_manifest: the etcd TLS material",
         "calico_ops.lifecycle.upgrade_manifest": {
             "content": ETCD_MANIFEST if not error else ETCD_MANIFEST.split("---\n", 1)[1],
             "dest": str(workdir / "artifacts" / "upgrade.yaml"),
             "etcd_endpoints": ["https://127.0.0.1:2379"],
             "etcd_key": s["etcd key"], "etcd_cert": s["etcd cert"], "etcd_ca": s["etcd ca"]}},
        {"name": "owner_references: detach (the dependent is a Secret)",
         "calico_ops.lifecycle.owner_references": {
             "state": "detached", "owner_api_versions": ["%s/v1" % OWNER_GROUP], "record_namespace": ns,
             "record_name": "sentinel-refs", "record_path": str(workdir / "records" / "owner-refs.json"),
             "fail_on_unlistable": False}},
        {"name": "owner_references: attach",
         "calico_ops.lifecycle.owner_references": {
             "state": "attached", "owner_api_versions": ["%s/v1" % OWNER_GROUP], "record_namespace": ns,
             "record_name": "sentinel-refs", "record_path": str(workdir / "records" / "owner-refs.json")}},
        {"name": "custom_resources", "calico_ops.lifecycle.custom_resources": {
            "src": str(workdir / "missing.yaml") if error else omit_file(workdir),
            "dest": str(workdir / "artifacts" / "custom-resources.yaml")}},
        {"name": "calico_facts", "calico_ops.lifecycle.calico_facts": {}},
        {"name": "kube_proxy_info", "calico_ops.lifecycle.kube_proxy_info": {}},
        {"name": "services_endpoint_info", "calico_ops.lifecycle.services_endpoint_info": {}},
        {"name": "ebpf_preflight_info", "calico_ops.lifecycle.ebpf_preflight_info": {"platform": "kubeadm"}},
        {"name": "ebpf_host_preflight_info", "calico_ops.lifecycle.ebpf_host_preflight_info": {}},
        {"name": "calico_rollout_info", "calico_ops.lifecycle.calico_rollout_info": {"namespace": "kube-system"}},
        {"name": "tigerastatus_info", "calico_ops.lifecycle.tigerastatus_info": {}},
        {"name": "objects_info: the Secrets, listed and by name", "calico_ops.lifecycle.objects_info": {
            "objects": [{"api_version": "v1", "kind": "Secret", "namespace": ns},
                        {"api_version": "v1", "kind": "Secret", "namespace": ns, "name": "patched"}]}},
        {"name": "diagnostics_archive: the namespace's pods (one with a token in its environment) and events",
         "calico_ops.lifecycle.diagnostics_archive": {
             "path": str(workdir / "diagnostics" / "diag.tar.gz"), "namespaces": [ns], "log_lines": 50,
             "reason": "failed with the bearer token %s" % s["bearer token"]}},
        {"name": "host_endpoint_migration", "calico_ops.lifecycle.host_endpoint_migration": {
            "state": "migrated", "record_namespace": ns, "wait_timeout": 5,
            "record_path": str(workdir / "records" / "host-endpoints.json")}},
    ]
    if not readers:
        tasks = tasks[:-11]
    if error:
        # owner_references and the modules that only read: the API server not reached, or a bearer token it
        # refuses (401)
        for task in tasks[-13:]:
            args = list(task.values())[1]
            if task["name"] == "calico_facts":
                args.update(api_key=s["bad token"])
            elif task["name"] not in ("custom_resources", "ebpf_host_preflight_info"):
                args.update(host="https://127.0.0.1:1")
    for task in tasks:
        task["register"] = "r_" + task["name"].split(":")[0].replace(" ", "_")
        task["ignore_errors"] = True
    tasks.append({"name": "Registered results", "ansible.builtin.debug": {
        "msg": "{{ [%s] }}" % ", ".join(sorted(set(t["register"] for t in tasks)))}})
    return [{"name": "Every module", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]


def unpacked(workdir):
    """The files of every archive written under ``workdir`` (diagnostics_archive's gzipped tars), unpacked beside
    it so that the search reads them: a compressed file hides what it holds."""
    out = []
    for archive in Path(workdir).rglob("*.tar.gz"):
        target = archive.parent / (archive.name + ".unpacked")
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
        out += [str(p) for p in target.rglob("*") if p.is_file()]
    return out


def omit_file(workdir):
    """A custom-resources.yaml for custom_resources (an Installation and an APIServer)."""
    path = Path(workdir).parent / ("%s-custom-resources.yaml" % Path(workdir).name)
    path.write_text(yaml.safe_dump_all([
        {"apiVersion": "operator.tigera.io/v1", "kind": "Installation", "metadata": {"name": "default"},
         "spec": {"calicoNetwork": {"ipPools": [{"cidr": "192.168.0.0/16"}]}}},
        {"apiVersion": "operator.tigera.io/v1", "kind": "APIServer", "metadata": {"name": "default"}, "spec": {}}]))
    return str(path)


def record_configmaps(cluster, namespace):
    out = json.loads(cluster.kubectl("get", "configmaps", "-A", "-l", "lifecycle.calico-ops.io/record",
                                     "-o", "json").stdout)
    return [("record ConfigMap %s/%s" % (i["metadata"]["namespace"], i["metadata"]["name"]), json.dumps(i))
            for i in out.get("items", [])]


def test_every_module_in_every_mode(cluster, world, tmp_path):
    """Every module, with the planted values, in --diff -vvvv (writes), --check --diff -vvvv and on an error path
    (a refused document, a rejected patch, a manifest without the etcd Secret; for the modules that only read, the
    API server not reached, or a bearer token it refuses)."""
    secrets = world["secrets"]
    texts, written = [], []

    def one(run):
        mode, args, error, readers = run
        workdir = tmp_path / mode
        workdir.mkdir()
        play = tmp_path / ("%s-play.yml" % mode)
        play.write_text(yaml.safe_dump(modules_play(world, workdir, error=error, readers=readers), sort_keys=False))
        env = token_env(cluster, secrets["bearer token"], world["ca"])
        return mode, workdir, readers, run_playbook(play, workdir, env, {}, args)

    def collect(outcome):
        mode, workdir, readers, proc = outcome
        found, data = channels("modules --%s" % mode, proc)
        assert data, "modules --%s: no JSON output\n%s\n%s" % (mode, proc.stdout[-3000:], proc.stderr[-3000:])
        tasks = [t for p in data["plays"] for t in p["tasks"]]
        assert len(tasks) >= (20 if readers else 11), [t["task"]["name"] for t in tasks]
        texts.extend(found)
        written.extend(files_under(workdir) + unpacked(workdir))

    # the writes first; then check mode (the writers: the modules that only read do the same in check mode) and
    # the error run side by side
    collect(one(("diff", ["--diff", "-vvvv"], False, True)))
    with ThreadPoolExecutor(max_workers=2) as pool:
        for outcome in pool.map(one, [("check", ["--check", "--diff", "-vvvv"], False, False),
                                      ("error", ["--diff", "-vvvv"], True, True)]):
            collect(outcome)
    # the values reached the cluster: the test cannot pass by not using them
    got = json.loads(cluster.kubectl("get", "secret", "from-manifest", "-n", world["namespace"], "-o",
                                     "json").stdout)
    assert base64.b64decode(got["data"]["token"]).decode() == secrets["manifest Secret data"]
    assert any(p.endswith("upgrade.yaml") for p in written), written
    # the diagnostics archive held the namespace's pods, the one with a token in its environment among them
    pods = [p for p in written if p.endswith("/namespaces/%s/pods.json" % world["namespace"])]
    assert pods and "holds-a-token" in Path(pods[0]).read_text(), written
    assert any("owner-refs.json" in p for p in written), written
    texts += record_configmaps(cluster, world["namespace"])
    found = leaks(texts, written, secrets)
    assert found == [], "\n".join("%s <- %s" % f for f in found)
    # every file the collection wrote is for its user only
    loose = [p for p in written if "/home/.ansible/" not in p and os.stat(p).st_mode & 0o077]
    assert loose == [], loose


PLAYBOOK_VARS = {
    "ebpf_install_variant": "TigeraSecureEnterprise",
    "ebpf_install_platform": "kubeadm",
    "ebpf_install_timeout": 5,
    "ebpf_install_wait": False,
    "services_endpoint_host": "api.cluster.example",
    "services_endpoint_port": 6443,
    "services_endpoint_nodes_resolve_host": True,  # a DNS name for install_ebpf (Calico issue 10683)
    "upgrade_timeout": 5,
    "upgrade_poll_interval": 1,
    "upgrade_etcd_endpoints": ["https://127.0.0.1:2379"],
    "calico_platform": "kubeadm",
}


def test_every_playbook_in_check_diff_vvvv(cluster, world, tmp_path, enterprise_site):  # noqa: F811
    """Every playbook with every secret input given (the pull secret and licence files, the etcd TLS material, the
    bearer token), in --check --diff -vvvv; install_ebpf of the enterprise variant from the stand-in enterprise
    release site, so its pull secret and licence steps run (dry runs). On this cluster without Calico some stop
    early (the upgrade finds no Calico: test_secrets.py runs it for real on an etcd install): their failure
    message is searched as well."""
    secrets = world["secrets"]
    url, _docs = enterprise_site
    env = token_env(cluster, secrets["bearer token"], world["ca"])

    def one(name):
        workdir = tmp_path / name.replace(".yml", "")
        workdir.mkdir()
        variables = dict(PLAYBOOK_VARS, **{
            "ebpf_install_pull_secret_file": str(world["inputs"] / "pull-secret.json"),
            "ebpf_install_license_file": str(world["inputs"] / "license.yaml"),
            "ebpf_install_manifest_url": cluster.mirror_url, "ebpf_install_downloads_url": url,
            "ebpf_install_artifacts_dir": str(workdir / "artifacts"),
            "preflight_report_dir": str(workdir / "report"),
            "upgrade_manifest_url": cluster.mirror_url, "upgrade_chart_repo_url": cluster.chart_repo_url,
            "upgrade_artifacts_dir": str(workdir / "artifacts"),
            "upgrade_etcd_key": secrets["etcd key"], "upgrade_etcd_cert": secrets["etcd cert"],
            "upgrade_etcd_ca": secrets["etcd ca"],
            "owner_references_record_path": str(workdir / "records" / "owner-refs.json"),
            "upgrade_owner_references_record_path": str(workdir / "records" / "upgrade-owner-refs.json"),
            "host_endpoint_migration_record_path": str(workdir / "records" / "host-endpoints.json"),
        })
        return name, workdir, run_playbook(REPO_ROOT / "playbooks" / name, workdir, env, variables,
                                           ["--check", "--diff", "-vvvv"])

    texts, written, ran = [], [], {}
    with ThreadPoolExecutor(max_workers=3) as pool:
        for name, workdir, proc in pool.map(one, PLAYBOOKS):
            found, data = channels(name, proc)
            assert data, "%s: no JSON output\n%s\n%s" % (name, proc.stdout[-3000:], proc.stderr[-3000:])
            texts += found
            written += files_under(workdir) + unpacked(workdir)
            ran[name] = [t["task"]["name"] for p in data["plays"] for t in p["tasks"]
                         if not all(h.get("skipped") for h in t["hosts"].values())]
    assert len(ran) >= 8, sorted(ran)
    # the secret inputs were used: the pull secret was read and dry-run applied. (In check mode on a cluster without
    # the operator its namespace does not exist, so that dry run fails and the play stops before the licence: the
    # licence goes through manifest_apply in test_every_module_in_every_mode, and test_secrets.py installs both.)
    assert any("Image pull secret" in t for t in ran["install_ebpf.yml"]), ran["install_ebpf.yml"]
    found = leaks(texts, written, secrets)
    assert found == [], "\n".join("%s <- %s" % f for f in found)
    # every file the roles wrote is for its user only (artifacts and downloads of real runs: test_secrets.py)
    assert any("/report/" in p for p in written), written  # in check mode the roles write their reports only
    loose = [p for p in written if "/home/.ansible/" not in p and os.stat(p).st_mode & 0o077]
    assert loose == [], loose


# -- the search fails when a redaction is gone ----------------------------------------------------------------------
# Each mutant removes redactions of the collection (edits: file, the exact text, what replaces it) in a copy of the
# collection, runs the modules' play in its modes (``diff``: --diff -vvvv with writes; ``check``: --check --diff
# -vvvv; ``error``: the forced error run, after a ``diff`` run made the objects it fails on) and must be caught: the
# sentinel search finds the secret that redaction protects (in ``results``: only in the task results). Each edit must
# apply exactly once, so a refactoring that moves the code makes this test fail instead of testing nothing.
MODULE_EXITS = ("plugins/module_utils/k8s/module.py", "        _redact_exits(self.module, self.redactor)\n", "")
SECRET_DATA = ("plugins/module_utils/k8s/redact.py", '    if obj.get("kind") == "Secret":\n        return True\n',
               '    if obj.get("kind") == "Secret":\n        return False\n')
KNOWN_VALUES = ("plugins/module_utils/k8s/redact.py",
                "        if form in text:\n            text = text.replace(form, MARKER)\n", "        pass\n")
LICENCE_FIELDS = ("plugins/module_utils/k8s/redact.py",
                  '    "LicenseKey": (("spec", "token"), ("spec", "certificate")),\n', "")
PATCH_PARTS = ("plugins/modules/merge_patch.py",
               "                result[key] = redact_secret_parts(result[key])\n", "                pass\n")
API_QUOTES = ("plugins/module_utils/k8s/errors.py",
              'detail = redact_api_message(api_message(body), secret="/secrets" in (path or "").split("?")[0])',
              "detail = api_message(body)")
DIAGNOSTICS_ENV = ("plugins/module_utils/diagnostics/rules.py", "    _walk_containers(value)\n", "")
UPGRADE_DOCS = ("plugins/module_utils/upgrade/manifest.py",
                'shown["data"] = dict((k, REDACTED) for k in new["data"])', 'shown["data"] = dict(new["data"])')
MUTANTS = [
    # (id, edits, modes, where, the secret, whether it must be found (False: the control, it must not))
    ("module-base-exits", [MODULE_EXITS], ["diff"], "any", "manifest Secret data", True),
    ("secret-data-in-objects", [SECRET_DATA], ["diff"], "any", "manifest Secret data", True),
    ("licence-key-fields", [LICENCE_FIELDS], ["check"], "any", "license token", True),
    ("merge-patch-secret-parts", [PATCH_PARTS], ["diff"], "any", "merge_patch Secret patch", True),
    ("api-error-quotes", [API_QUOTES], ["diff", "error"], "any", "merge_patch Secret", True),
    ("upgrade-manifest-documents", [UPGRADE_DOCS], ["diff"], "any", "etcd key", True),
    # the diagnostics archive (unpacked for the search): a pod's credential-named environment value
    ("diagnostics-pod-environment", [DIAGNOSTICS_ENV], ["readers"], "any", "pod environment token", True),
    # the known values of the module's secret options (every form: base64 too) are a second layer under the
    # rules above: with the Secret rules of the results gone, it alone keeps the etcd key (base64 in the returned
    # documents) out of the results; without it as well, the key is there
    ("known-values-alone-keep-the-key-out", [SECRET_DATA, UPGRADE_DOCS], ["diff"], "results", "etcd key", False),
    ("known-values-in-text", [SECRET_DATA, UPGRADE_DOCS, KNOWN_VALUES], ["diff"], "results", "etcd key", True),
]
MODE_ARGS = {"diff": ["--diff", "-vvvv"], "check": ["--check", "--diff", "-vvvv"], "error": ["--diff", "-vvvv"],
             "readers": ["--diff", "-vvvv"]}  # readers: the diff run with the modules that only read


def mutated_collection(root, edits):
    """A copy of the collection's plugins and metadata under ``root`` (an ANSIBLE_COLLECTIONS_PATH) with each edit
    (path, original, replacement) made."""
    dest = Path(root) / "ansible_collections" / "calico_ops" / "lifecycle"
    dest.mkdir(parents=True)
    for name in ("plugins", "meta"):
        shutil.copytree(str(REPO_ROOT / name), str(dest / name), ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(str(REPO_ROOT / "galaxy.yml"), str(dest / "galaxy.yml"))
    for path, original, replacement in edits:
        target = dest / path
        text = target.read_text()
        assert text.count(original) == 1, "the mutation of %s no longer applies: %r" % (path, original)
        target.write_text(text.replace(original, replacement))
    return str(root)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_the_sentinel_search_fails_when_a_redaction_is_removed(cluster, world, tmp_path, mutant):
    """The sentinel search above, on a copy of the collection with redactions removed: it finds the secret the
    removed redaction protects (and passes on the collection as it is: test_every_module_in_every_mode)."""
    name, edits, modes, where, secret, must_leak = mutant
    secrets = world["secrets"]
    env = token_env(cluster, secrets["bearer token"], world["ca"])
    env["ANSIBLE_COLLECTIONS_PATH"] = mutated_collection(tmp_path / "collections", edits)
    found = []
    for mode in modes:
        workdir = tmp_path / mode
        workdir.mkdir()
        play = tmp_path / ("%s-play.yml" % mode)
        play.write_text(yaml.safe_dump(modules_play(world, workdir, error=mode == "error",
                                                    readers=mode in ("error", "readers")), sort_keys=False))
        proc = run_playbook(play, workdir, env, {}, MODE_ARGS[mode])
        texts, data = channels("modules --%s (%s)" % (mode, name), proc)
        assert data, "no JSON output\n%s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:])
        if where == "results":
            texts = [t for t in texts if ": result of " in t[0]]
            found += leaks(texts, [], secrets)
        else:
            found += leaks(texts, files_under(workdir) + unpacked(workdir), secrets)
    hits = [where_ for where_, which in found if which == secret]
    if must_leak:
        assert hits, "with %s removed the search found no %r (found: %s)" % (name, secret, found)
    else:
        assert hits == [], "%s found in: %s" % (secret, hits)
