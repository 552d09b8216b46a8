"""Secrets: with a pull secret (a file), a license (a file) and an etcd client key given, none of their values appears
in the playbook output at -vvvv with --diff or in any file the run wrote (artifacts, reports, records, the home directory and the
working directory are searched, every file), in plain text or base64. The values reach the cluster (so the test
cannot pass by not using them).

install_ebpf.yml with the enterprise variant (the stand-in enterprise release site of the integration tests, a
stand-in LicenseKey type; the real operator runs, Calico Enterprise cannot) on a control plane of the test's own; upgrade.yml of an etcd-datastore manifest install, with
the upgrade job's ServiceAccount token of docs/rbac.yml.
"""

import base64
import json
import os
import uuid
from pathlib import Path

import pytest
import yaml

from calico_support import SOURCE, TARGET, get, wait_daemonset
from localcp.fixtures import NO_NETWORK_VARS, Ansible
from test_install_ebpf import _vars, enterprise_site  # noqa: F401 - enterprise_site: a fixture
from test_owner_references import _crd
from test_rbac import service_account, token_run  # noqa: F401 - service_account: a fixture
from test_upgrade import install, upgrade_vars  # noqa: F401 - install: a fixture

pytestmark = pytest.mark.integration

LICENSE_CRD = _crd("projectcalico.org", "v3", "licensekeys", "LicenseKey", "Cluster")  # the enterprise API's type


def forms(value):
    """The ways a secret value could leak: itself, base64 of it, JSON-escaped (a PEM's newlines as ``\\n``, in JSON
    output), and each long line of it (not PEM's armor lines, which every certificate shares)."""
    out = {value, base64.b64encode(value.encode()).decode(), json.dumps(value)[1:-1]}
    out.update(line for line in value.splitlines() if len(line) >= 16 and not line.startswith("-----"))
    return out


def leaks(texts, files, secrets):
    """(where, which secret) for every occurrence."""
    found = []
    for where, text in texts:
        for name, value in secrets.items():
            if any(f in text for f in forms(value)):
                found.append((where, name))
    for path in files:
        try:
            data = Path(path).read_bytes().decode(errors="replace")
        except OSError:
            continue
        for name, value in secrets.items():
            if any(f in data for f in forms(value)):
                found.append((str(path), name))
    return found


def files_under(*roots):
    out = []
    for root in roots:
        for base, _dirs, names in os.walk(str(root)):
            out += [os.path.join(base, n) for n in names]
    return out


def test_the_leak_search_can_fail(tmp_path):
    """The search is not vacuous: a value in the output, a file, base64-encoded or one line of a PEM, is found."""
    pem = "-----BEGIN PRIVATE KEY-----\nabcdefghijklmnopqrstuvwxyz0123456789\n-----END PRIVATE KEY-----"
    (tmp_path / "a.txt").write_text("x " + base64.b64encode(b"hunter2-hunter2-hunter2").decode())
    (tmp_path / "b.txt").write_text("key: abcdefghijklmnopqrstuvwxyz0123456789\n-----BEGIN PRIVATE KEY-----")
    found = leaks([("stdout", "... hunter2-hunter2-hunter2 ...")], files_under(tmp_path),
                  {"password": "hunter2-hunter2-hunter2", "key": pem})
    assert sorted(found) == sorted([("stdout", "password"), (str(tmp_path / "a.txt"), "password"),
                                    (str(tmp_path / "b.txt"), "key")])
    assert leaks([("stdout", "-----BEGIN PRIVATE KEY-----")], [], {"key": pem}) == []
    # JSON-escaped: a multi-line value whose lines are all short or armor is found only in that form
    short = "-----BEGIN KEY-----\nshort-line-1\nshort-line-2\n-----END KEY-----"
    assert leaks([("json", json.dumps({"k": short}))], [], {"key": short}) == [("json", "key")]


def test_pull_secret_and_license_never_shown_nor_written(pristine_cluster, tmp_path, enterprise_site):  # noqa: F811
    cluster = pristine_cluster
    url, _docs = enterprise_site
    cluster.apply(yaml.safe_dump(LICENSE_CRD))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/licensekeys.projectcalico.org")
    token = "pull-" + uuid.uuid4().hex + uuid.uuid4().hex
    dockerconfig = json.dumps({"auths": {"quay.io": {"auth": base64.b64encode(("robot:" + token).encode()).decode()}}})
    license_token = "license-token-" + uuid.uuid4().hex + uuid.uuid4().hex
    license_cert = "-----BEGIN CERTIFICATE-----\nlicense-cert-%s\n-----END CERTIFICATE-----" % uuid.uuid4().hex
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "pull-secret.json").write_text(dockerconfig)
    (inputs / "license.yaml").write_text(yaml.safe_dump({
        "apiVersion": "projectcalico.org/v3", "kind": "LicenseKey", "metadata": {"name": "default"},
        "spec": {"token": license_token, "certificate": license_cert}}))
    secrets = {"pull secret token": token, "pull secret": dockerconfig, "license token": license_token,
               "license certificate": license_cert}
    run_dir = tmp_path / "run"
    home = run_dir / "home"
    home.mkdir(parents=True)
    ansible = Ansible(cluster, tmp_path)  # its vars file (the inputs) stays out of run_dir
    # The real operator runs the enterprise variant here, but Calico Enterprise cannot (no licence, no images):
    # TigeraStatus is read once, not waited for, and APIServer is left out (its APIService would shadow the
    # LicenseKey type this test reads back). This test is about where the secrets go.
    res = ansible.playbook("playbooks/install_ebpf.yml", _vars(
        cluster, run_dir, ebpf_install_variant="TigeraSecureEnterprise", ebpf_install_downloads_url=url,
        ebpf_install_pull_secret_file=str(inputs / "pull-secret.json"),
        ebpf_install_license_file=str(inputs / "license.yaml"), ebpf_install_wait=False,
        ebpf_install_apiserver=False, ebpf_install_goldmane=False, ebpf_install_whisker=False,
        ebpf_install_disable_kube_proxy=False),
        callback="default", extra_args=["-vvvv", "--diff"], env={"HOME": str(home)})
    assert res.rc == 0, res.stdout[-4000:] + res.stderr[-2000:]
    # the values were used
    secret = json.loads(cluster.kubectl("get", "secret", "tigera-pull-secret", "-n", "tigera-operator", "-o",
                                        "json").stdout)
    assert base64.b64decode(secret["data"][".dockerconfigjson"]).decode() == dockerconfig
    lic = json.loads(cluster.kubectl("get", "licensekeys.projectcalico.org", "default", "-o", "json").stdout)
    assert lic["spec"]["token"] == license_token
    # and shown or written nowhere
    written = files_under(run_dir)
    assert len(written) >= 3, written  # the artifacts and the report at least
    assert leaks([("stdout", res.stdout), ("stderr", res.stderr)], written, secrets) == []
    # what the role wrote (downloaded release files, the edited custom resources, the report) is its user's only
    assert [p for p in written if "/home/" not in p and os.stat(p).st_mode & 0o077] == []


def test_etcd_key_never_shown_nor_written(cluster, install, service_account, tmp_path):  # noqa: F811
    """upgrade.yml of a calico-etcd.yaml install, with the upgrade job's ServiceAccount token (docs/rbac.yml: the
    least-privilege run of upgrade.yml too)."""
    key = "-----BEGIN PRIVATE KEY-----\netcd-client-key-%s\n-----END PRIVATE KEY-----\n" % uuid.uuid4().hex
    cert = "-----BEGIN CERTIFICATE-----\netcd-client-cert-%s\n-----END CERTIFICATE-----\n" % uuid.uuid4().hex
    ca = "-----BEGIN CERTIFICATE-----\netcd-ca-%s\n-----END CERTIFICATE-----\n" % uuid.uuid4().hex
    install.apply_release(SOURCE, "calico-etcd.yaml")
    install.forget_later(TARGET, "calico-etcd.yaml")
    wait_daemonset(cluster, "calico-node")
    variables = upgrade_vars(cluster, tmp_path, install, upgrade_etcd_endpoints=["https://127.0.0.1:22379"],
                             upgrade_etcd_key=key, upgrade_etcd_cert=cert, upgrade_etcd_ca=ca)
    env, _user = service_account("upgrade")
    # kwok's nodes carry no packet: no connectivity check or prober around the upgrade (fixtures.NO_NETWORK_VARS)
    res = token_run("playbooks/upgrade.yml", env, tmp_path, args=["-vvvv", "--diff"],
                    **dict(NO_NETWORK_VARS, **variables))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    stored = get(cluster, "v1", "Secret", "calico-etcd-secrets", "kube-system")["data"]
    assert base64.b64decode(stored["etcd-key"]).decode() == key  # used
    # the upgrade's record ConfigMaps are written by the collection too
    records = [json.dumps(get(cluster, "v1", "ConfigMap", name, ns) or {}) for ns, name in install.configmaps]
    # everything the run wrote (artifacts, records, HOME and the working directory are tmp_path), but the test's
    # own input (vars.json, token_run's variables file)
    written = [p for p in files_under(tmp_path) if p != str(tmp_path / "vars.json")]
    assert any(p.endswith("upgrade.yaml") for p in written), written
    found = leaks([("stdout", res.stdout), ("stderr", res.stderr)] + [("record ConfigMap", r) for r in records],
                  written, {"etcd key": key.strip(), "etcd cert": cert.strip(), "etcd ca": ca.strip()})
    assert found == []
    # the artifacts (downloaded manifest, the rendered upgrade.yaml) and records are the user's only
    ours = (str(tmp_path / "vars-"), str(tmp_path / "ca.crt"))  # the test's inputs: variables, the token's CA
    loose = [p for p in written if "/home/" not in p and os.stat(p).st_mode & 0o077 and not p.startswith(ours)]
    assert loose == [], loose
