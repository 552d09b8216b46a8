"""The inventories under ``inventories/``: each one parses, every playbook passes ``--syntax-check`` against it,
and its variables are the roles' own (no typo, no value the role's argument spec refuses).

No cluster is needed: ``ansible-inventory``, ``ansible-playbook --syntax-check`` and a play of
``validate_argument_spec`` tasks (the check a role runs on entry) only read the inventory.
"""

import functools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
INVENTORIES = sorted(p.name for p in (ROOT / "inventories").iterdir() if (p / "hosts.yml").is_file())
EXAMPLES = ("kubeadm", "kops", "openshift", "eks", "aks", "mke")
PLAYBOOKS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "playbooks").rglob("*.yml"))
ROLES = sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/meta/argument_specs.yml"))
# Variables the collection reads that are not a role option: calico_platform and calico_manifest_url are the
# defaults of the roles' *_platform and ebpf_install_manifest_url; inventories/local also sets
# calico_chart_repo_url (its upgrade_chart_repo_url reads it).
# calico_kubeconfig, calico_context and calico_k8s_auth are a fleet inventory's per-cluster connection settings
# (inventories/fleet, docs/fleet.md): the roles' *_kubeconfig / *_context defaults and the playbooks' environment.
SHARED = {"calico_platform", "calico_manifest_url", "calico_chart_repo_url", "calico_kubeconfig", "calico_context",
          "calico_k8s_auth"}
# Options that only matter on one platform, by a word of their name: each must be set in that platform's
# example inventory.
# The host whose variables an inventory is checked on: the controller (localhost), or in the fleet inventory (each
# host a cluster, docs/fleet.md) a cluster host, whose group calico_fleet carries the platform and the connection.
SUBJECT = {"fleet": "staging-eu-1"}
PLATFORM_WORDS = {
    "kops": ("_kops_", "aws_dns"),
    "openshift": ("_openshift_",),
    "mke": ("_mke_",),
    "eks": ("bottlerocket", "flex_volume", "aws_dns"),
    "aks": ("_felix_",),
}


def env():
    out = dict(os.environ)
    out.update({"ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_COLLECTIONS_PATH": collections_path(),
                "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0", "ANSIBLE_LOCALHOST_WARNING": "0",
                "PATH": str(BIN) + os.pathsep + os.environ.get("PATH", "")})
    return out


def collections_path():
    """A collections path where calico_ops.lifecycle is this working tree (what `make collection` links)."""
    link = ROOT / ".build" / "collections" / "ansible_collections" / "calico_ops" / "lifecycle"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(ROOT)
        except FileExistsError:
            pass
    return str(ROOT / ".build" / "collections")


def run(*cmd, cwd=ROOT):
    return subprocess.run(cmd, cwd=str(cwd), env=env(), capture_output=True, text=True, timeout=600, check=False)


def role_options():
    """{role: {entry point: set of option names}} from every role's meta/argument_specs.yml."""
    out = {}
    for role in ROLES:
        specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        out[role] = {entry: set((spec.get("options") or {}).keys()) for entry, spec in specs.items()}
    return out


@functools.lru_cache(maxsize=None)
def inventory(name):
    proc = run(str(BIN / "ansible-inventory"), "-i", "inventories/%s" % name, "--list")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_example_platform_has_an_inventory():
    assert set(EXAMPLES) <= set(INVENTORIES), INVENTORIES
    assert "local" in INVENTORIES


@pytest.mark.parametrize("name", INVENTORIES)
def test_inventory_lists_and_sets_the_platform(name):
    data = inventory(name)
    host = data["_meta"]["hostvars"][SUBJECT.get(name, "localhost")]
    assert host["ansible_connection"] == "local"
    assert host["calico_platform"] == ("kubeadm" if name in ("local", "fleet") else name)


def test_every_host_of_the_fleet_is_a_cluster_with_connection_settings():
    data = inventory("fleet")
    hosts = data["calico_fleet"]["children"]
    clusters = [h for child in hosts for h in data[child]["hosts"]]
    assert len(clusters) >= 3 and SUBJECT["fleet"] in clusters
    for host in clusters:
        v = data["_meta"]["hostvars"][host]
        assert v["ansible_connection"] == "local", host
        assert v.get("calico_kubeconfig") or (v.get("calico_k8s_auth") or {}).get("K8S_AUTH_HOST"), host


@pytest.mark.parametrize("name", INVENTORIES)
def test_every_playbook_passes_syntax_check(name):
    assert "playbooks/install_ebpf.yml" in PLAYBOOKS and "playbooks/awx/configure.yml" in PLAYBOOKS
    proc = run(str(BIN / "ansible-playbook"), "-i", "inventories/%s" % name, "--syntax-check", *PLAYBOOKS)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for playbook in PLAYBOOKS:
        assert "playbook: %s" % playbook in proc.stdout


@pytest.mark.parametrize("name", INVENTORIES)
def test_role_variables_are_options_of_the_role(name):
    """A variable named like a role's option (its prefix) must be one: a typo would be ignored silently."""
    options = role_options()
    localhost = inventory(name)["_meta"]["hostvars"][SUBJECT.get(name, "localhost")]
    unknown = []
    for var in localhost:
        for role in sorted(options, key=len, reverse=True):
            if var.startswith(role + "_"):
                if not any(var in opts for opts in options[role].values()):
                    unknown.append(var)
                break
        else:
            if var.startswith("calico_") and var not in SHARED:
                unknown.append(var)
    assert unknown == []


@pytest.mark.parametrize("platform", sorted(PLATFORM_WORDS))
def test_platform_options_are_set_in_that_platform_inventory(platform):
    options = set()
    for entries in role_options().values():
        for opts in entries.values():
            options |= opts
    wanted = sorted(o for o in options if any(w in o for w in PLATFORM_WORDS[platform]))
    assert wanted, "no option matches %s" % (PLATFORM_WORDS[platform],)
    localhost = inventory(platform)["_meta"]["hostvars"]["localhost"]
    assert [o for o in wanted if o not in localhost] == []


@pytest.mark.parametrize("name", INVENTORIES)
def test_inventory_values_pass_the_roles_argument_specs(name, tmp_path):
    """The check each role runs on entry (validate_argument_spec), on the inventory's values, templated."""
    tasks = []
    for role, entries in sorted(role_options().items()):
        for entry in sorted(entries):
            tasks.append({
                "name": "%s %s" % (role, entry),
                "ansible.builtin.validate_argument_spec": {
                    "argument_spec": "{{ (lookup('ansible.builtin.file', '%s') | from_yaml).argument_specs['%s'].options }}"
                                     % (ROOT / "roles" / role / "meta" / "argument_specs.yml", entry),
                    "provided_arguments": "{{ hostvars[inventory_hostname] | dict2items | selectattr('key', 'in', %s)"
                                          " | items2dict }}" % json.dumps(sorted(entries[entry])),
                },
            })
    play = [{"name": "Validate", "hosts": SUBJECT.get(name, "localhost"), "gather_facts": False, "tasks": tasks}]
    path = tmp_path / "validate.yml"
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    proc = run(str(BIN / "ansible-playbook"), "-i", str(ROOT / "inventories" / name), str(path))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "ok=%d" % len(tasks) in proc.stdout


def test_the_argument_spec_check_can_fail(tmp_path):
    """The validation above rejects a value outside the choices (so it is not vacuous)."""
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "hosts.yml").write_text((ROOT / "inventories" / "local" / "hosts.yml").read_text())
    (inv / "group_vars" / "all" / "main.yml").write_text(textwrap.dedent("""\
        kube_proxy_state: stopped
        """))
    play = [{"name": "Validate", "hosts": "localhost", "gather_facts": False, "tasks": [{
        "ansible.builtin.validate_argument_spec": {
            "argument_spec": "{{ (lookup('ansible.builtin.file', '%s') | from_yaml).argument_specs.main.options }}"
                             % (ROOT / "roles" / "kube_proxy" / "meta" / "argument_specs.yml"),
            "provided_arguments": "{{ {'kube_proxy_state': kube_proxy_state} }}"}}]}]
    (tmp_path / "validate.yml").write_text(yaml.safe_dump(play))
    proc = run(str(BIN / "ansible-playbook"), "-i", str(inv), str(tmp_path / "validate.yml"))
    assert proc.returncode != 0
    assert "kube_proxy_state" in proc.stdout
