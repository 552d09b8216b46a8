"""A cluster's token, given as a fleet host's ``calico_k8s_auth`` (docs/fleet.md), appears in no ``-vvv`` output and
on no process's command line (nor in any process's environment) while a job runs (issue 51, item 6).

The job is ``migrate_to_operator --check`` on a cluster host whose only connection is that token (the controller's
environment names no cluster): kubernetes.core's ``k8s_info`` (its two reads of the install) and this collection's
``record_location_info`` and ``operator_migration_info`` run, nothing is written. The migration's record says done,
so the job succeeds without a manifest install. Every process's ``/proc/<pid>/cmdline`` and ``environ`` is read
again and again while the job runs; module processes are named by their AnsiballZ file (pipelining off), so the test
knows it watched them. A control play that passes the token through ``environment:``, as the playbooks did before,
shows the same watch finding it on a command line.
"""

import base64
import json
import os
import time
import uuid
from pathlib import Path

import pytest
import yaml

from localcp.fixtures import ansible_python, kill_tree
from localcp.fleet import CONTROLLER_ENV

pytestmark = pytest.mark.integration

PLAYBOOK = "playbooks/migrate_to_operator.yml"
RECORD = "calico-ops-operator-migration"


def _token(cluster, namespace, name):
    """A token of a new ServiceAccount bound to cluster-admin (the binding removed by the caller)."""
    cluster.kubectl("-n", namespace, "create", "serviceaccount", name)
    cluster.kubectl("create", "clusterrolebinding", name, "--clusterrole=cluster-admin",
                    "--serviceaccount=%s:%s" % (namespace, name))
    return cluster.kubectl("-n", namespace, "create", "token", name, "--duration=20m").stdout.strip()


def _inventory(cluster, tmp_path, token):
    kubeconfig = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    ca = tmp_path / "cluster-ca.crt"
    ca.write_bytes(base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]))
    ca.chmod(0o600)
    auth = {"K8S_AUTH_HOST": cluster.server, "K8S_AUTH_API_KEY": token, "K8S_AUTH_SSL_CA_CERT": str(ca),
            "K8S_AUTH_VERIFY_SSL": "true"}
    inventory = tmp_path / "fleet.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"calico_fleet": {
        "hosts": {"cluster-token": {"calico_k8s_auth": auth}},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": ansible_python()}}}}}))
    return str(inventory)


def _watch(proc, secret, timeout=300):
    """Read every process's command line and environment until ``proc`` ends: (where the secret was found, the
    module files seen running, sweeps made)."""
    secret = secret.encode()
    found, modules, sweeps = set(), set(), 0
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if time.monotonic() > deadline:
            kill_tree(proc)
            pytest.fail("the job did not end within %ss" % timeout)
        sweeps += 1
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            for part in ("cmdline", "environ"):
                try:
                    with open("/proc/%s/%s" % (pid, part), "rb") as handle:
                        data = handle.read()
                except OSError:  # gone meanwhile
                    continue
                if secret in data:  # where, the token itself left out
                    shown = data.replace(secret, b"<token>").replace(b"\0", b" ")[:200]
                    found.add((part, shown.decode(errors="replace")))
                if part == "cmdline":
                    modules.update(w.rsplit("/", 1)[-1] for w in data.decode(errors="replace").split("\0")
                                   if "AnsiballZ_" in w)
    return found, modules, sweeps


def _log(ansible):
    return "\n".join(p.read_text(errors="replace") for p in sorted(ansible.workdir.glob("started-*.log")))


def test_a_fleet_token_reaches_no_output_and_no_command_line(cluster, namespace, ansible, tmp_path):
    name = "token-proof-%s" % uuid.uuid4().hex[:6]
    token = _token(cluster, namespace, name)
    mark = cluster.audit.mark()
    try:
        cluster.kubectl("-n", namespace, "create", "configmap", RECORD, "--from-literal=phase=done")
        inventory = _inventory(cluster, tmp_path, token)
        # the controller names no cluster; modules as files (pipelining off) so that their processes are named
        env = dict(CONTROLLER_ENV, ANSIBLE_PIPELINING="0")
        proc = ansible.start(PLAYBOOK, inventory=inventory, check=True, callback="ansible.builtin.default",
                             extra_args=["-vvv"], env=env,
                             extra_vars={"calico_target": "cluster-token", "operator_migration_namespace": namespace,
                                         "operator_migration_record_namespace": namespace})
        found, modules, sweeps = _watch(proc, token)
        out = _log(ansible)
        assert proc.returncode == 0, out[-4000:]
        assert "the migration is done (recorded)" in out and "EXEC /bin/sh -c" in out, out[-3000:]
        # it watched the modules of both collections while they ran, and the token was in none of their processes
        assert {"AnsiballZ_k8s_info.py", "AnsiballZ_operator_migration_info.py"} <= modules, (modules, sweeps)
        assert found == set(), found
        assert token not in out
        # the cluster was reached with that token (the ServiceAccount's reads in the audit log), and nothing written
        user = "system:serviceaccount:%s:%s" % (namespace, name)
        reads = cluster.audit.reads_since(mark, users=(user,))
        assert {(e.get("objectRef") or {}).get("resource") for e in reads} >= {"daemonsets", "configmaps"}, reads
        assert cluster.audit.writes_since(mark, users=(user,)) == []

        # the control: the same watch finds the token where the playbooks put it before (a play's environment)
        control = ansible.workdir / "control.yml"
        control.write_text(yaml.safe_dump([{
            "name": "The token in the environment, as the playbooks passed calico_k8s_auth before",
            "hosts": "cluster-token", "gather_facts": False,
            "environment": "{{ calico_k8s_auth }}",
            "tasks": [{"name": "Run one command", "ansible.builtin.command": "sleep 2", "changed_when": False}]}]))
        proc = ansible.start(str(control), inventory=inventory, callback="ansible.builtin.default",
                             extra_args=["-vvv"], env=env)
        found, _, _ = _watch(proc, token)
        assert proc.returncode == 0
        assert any(part == "cmdline" for part, _ in found), found
        assert token in _log(ansible)
    finally:
        cluster.kubectl("delete", "clusterrolebinding", name, "--ignore-not-found", check=False)


def test_the_fleet_plan_refuses_a_setting_not_taken_naming_its_key(ansible, tmp_path):
    """A key the modules do not all take (a password, a proxy) fails the rollout's plan, naming the host and the key,
    never the value, before any cluster is reached."""
    inventory = tmp_path / "fleet.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"calico_fleet": {
        "hosts": {"cluster-a": {"calico_k8s_auth": {"K8S_AUTH_HOST": "https://127.0.0.1:9",
                                                    "K8S_AUTH_PASSWORD": "pw-never-shown"}}},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": ansible_python()}}}}}))
    out = ansible.playbook("playbooks/fleet_rollout.yml", inventory=str(inventory), env=dict(CONTROLLER_ENV),
                           extra_vars={"fleet_rollout_job": "enable_ebpf",
                                       "fleet_rollout_summary_dir": str(tmp_path / "summary")},
                           callback="ansible.builtin.default")
    assert out.rc != 0
    assert "cluster host cluster-a: calico_k8s_auth: K8S_AUTH_PASSWORD not taken" in out.stdout, out.stdout[-3000:]
    assert "nothing was written to any cluster" in out.stdout
    assert "pw-never-shown" not in out.stdout + out.stderr
    assert json.dumps("pw-never-shown") not in out.stdout
