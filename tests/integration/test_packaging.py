"""The collection as users get it: ``ansible-galaxy collection build``, the tarball installed into an empty
collections path, ``ansible-doc`` for every module and role from there, and ``ansible-playbook
calico_ops.lifecycle.preflight`` by its FQCN against the local control plane with only that installed copy (and
kubernetes.core from the ansible package) on the collections path."""

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

import ansible_collections.kubernetes.core as kubernetes_core

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
TARBALL = "%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
# site-packages, whose ansible_collections holds kubernetes.core (the `ansible` package)
SITE = str(Path(kubernetes_core.__path__[0]).parents[2])
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
ROLES = sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/meta/argument_specs.yml"))
PLAYBOOKS = sorted(p.stem for p in (ROOT / "playbooks").glob("*.yml"))
# what the tarball must leave out: tests and harness, Molecule, caches, build and run outputs, VCS and tool files
LEFT_OUT = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.git|\.venv|\.build|\.cache|\.ansible)(/|$)|\.pyc$|\.tar\.gz$"
                      r"|^(tests|extensions|benchmarks|collections|\.ci|\.config|changelogs/fragments|preflight-report"
                      r"|calico-artifacts)(/|$)|^(Makefile|pytest\.ini|requirements-dev\.txt|\.ansible-lint|\.gitignore)$")


def run(cmd, env, cwd, timeout=600):
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=str(cwd), capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, "%s failed (%d):\n%s\n%s" % (
        " ".join(map(str, cmd)), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


@pytest.fixture(scope="module")
def installed(cluster, tmp_path_factory):
    """(tarball, installed collection dir, environment with only the installed copy on the collections path)."""
    top = tmp_path_factory.mktemp("packaging")
    dist, empty = top / "dist", top / "collections"
    empty.mkdir()
    env = dict(cluster.env)
    env.update({"ANSIBLE_COLLECTIONS_PATH": "%s%s%s" % (empty, os.pathsep, SITE), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_LOCALHOST_WARNING": "0"})
    env.pop("PYTHONPATH", None)
    run([BIN / "ansible-galaxy", "collection", "build", "--output-path", dist, ROOT], env, top)
    tarball = dist / TARBALL
    run([BIN / "ansible-galaxy", "collection", "install", "--no-deps", "-p", empty, tarball], env, top)
    home = empty / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]
    assert (home / "MANIFEST.json").is_file()
    return tarball, home, env, top


def test_tarball_leaves_out_tests_caches_and_build_outputs(installed, capsys):
    tarball, _, _, _ = installed
    with tarfile.open(str(tarball)) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    with capsys.disabled():
        print("\n%s: %d bytes (%.1f KiB), %d entries" % (tarball.name, tarball.stat().st_size,
                                                        tarball.stat().st_size / 1024.0, len(names)))
    assert [n for n in names if LEFT_OUT.search(n)] == []
    assert [m.name for m in members if m.issym() or m.islnk()] == []
    for needed in ["MANIFEST.json", "FILES.json", "README.md", "meta/runtime.yml", "meta/execution-environment.yml",
                   "meta/ee-requirements.txt", "meta/ee-bindep.txt", "changelogs/changelog.yaml",
                   "inventories/local/hosts.yml", "inventories/local/group_vars/all/main.yml", "docs/rbac.yml",
                   "docs/platforms.md", "docs/awx.md", "playbooks/awx/configure.yml", "requirements-awx.yml",
                   "LICENSE"]:
        assert needed in names, needed
    assert ["plugins/modules/%s.py" % m for m in MODULES if "plugins/modules/%s.py" % m not in names] == []
    assert ["roles/%s" % r for r in ROLES if "roles/%s/meta/argument_specs.yml" % r not in names] == []
    assert ["roles/%s" % r for r in ROLES if "roles/%s/README.md" % r not in names] == []  # galaxy-importer needs them
    assert tarball.stat().st_size < 1024 * 1024


def test_only_the_installed_copy_is_on_the_collections_path(installed):
    _, home, env, top = installed
    proc = run([BIN / "ansible-galaxy", "collection", "list", "%s.%s" % (GALAXY["namespace"], GALAXY["name"]),
                "--format", "json"], env, top)
    found = json.loads(proc.stdout)
    assert list(found) == [str(home.parent.parent)], found


def test_ansible_doc_renders_every_module_and_role_from_the_install(installed):
    _, home, env, top = installed
    fq = "%s.%s." % (GALAXY["namespace"], GALAXY["name"])
    listed = json.loads(run([BIN / "ansible-doc", "-t", "module", "-l", fq[:-1], "--json"], env, top).stdout)
    assert sorted(listed) == [fq + m for m in MODULES]
    docs = json.loads(run([BIN / "ansible-doc", "-t", "module", "--json"] + [fq + m for m in MODULES], env, top).stdout)
    assert sorted(docs) == [fq + m for m in MODULES]
    for name, data in docs.items():
        doc = data["doc"]
        assert doc["module"] == name.rsplit(".", 1)[1]
        assert doc["filename"] == str(home / "plugins" / "modules" / (doc["module"] + ".py"))
        assert doc["short_description"] and doc["options"] is not None
        assert data["examples"] and data["return"] is not None, name
    # the text rendering too (what users read), one call for all modules
    text = run([BIN / "ansible-doc", "-t", "module"] + [fq + m for m in MODULES], env, top).stdout
    for m in MODULES:
        assert "(%s)" % (home / "plugins" / "modules" / (m + ".py")) in text, m

    roles = json.loads(run([BIN / "ansible-doc", "-t", "role", "--json"] + [fq + r for r in ROLES], env, top).stdout)
    assert sorted(roles) == [fq + r for r in ROLES]
    for name, data in roles.items():
        assert data["path"] == str(home)
        assert "main" in data["entry_points"], name
        for entry in data["entry_points"].values():
            assert entry["short_description"] and entry["options"], name


def test_playbooks_are_listed_by_fqcn(installed):
    _, home, _, _ = installed
    assert sorted(p.stem for p in (home / "playbooks").glob("*.yml")) == PLAYBOOKS


def test_preflight_playbook_by_fqcn_against_the_control_plane(installed, cluster):
    _, home, env, top = installed
    work = top / "run"
    work.mkdir()
    # PWD as a shell sets it: the report's default directory is $PWD/preflight-report
    env = dict(env, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", PWD=str(work))
    proc = run([BIN / "ansible-playbook", "calico_ops.lifecycle.preflight", "-i",
                home / "inventories" / "local" / "hosts.yml"], env, work, timeout=900)
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    stats = data["stats"]["localhost"]
    assert stats["failures"] == 0 and stats["unreachable"] == 0 and stats["ok"] > 0, stats
    # the role ran from the installed copy
    paths = [t["task"].get("path", "") for play in data["plays"] for t in play["tasks"]]
    assert any(p.startswith(str(home / "roles" / "preflight")) for p in paths), paths[:5]
    assert not [p for p in paths if p.startswith(str(ROOT) + "/")]
    # and read the real cluster: the report (default directory under the working directory) names its nodes
    report = json.loads((work / "preflight-report" / "ebpf-preflight.json").read_text())
    nodes = sorted(n.metadata.name for n in cluster.k8s.resources.get(api_version="v1", kind="Node").get().items)
    assert sorted(report["nodes"]) == nodes
    assert report["eligible"] is True
