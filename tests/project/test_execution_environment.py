"""The collection's execution environment metadata (meta/execution-environment.yml) and the sample image
definition (execution-environment.yml): ansible-builder (in .venv) reads the first from the installed collection
(``introspect``) and turns the second into a build context (``create``, no container engine needed)."""

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from bindep.depends import Depends

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
VERSION = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
TARBALL = "calico_ops-lifecycle-%s.tar.gz" % VERSION


def run(*cmd, cwd=ROOT, **env_overrides):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", PATH=str(BIN) + os.pathsep + os.environ.get("PATH", ""))
    env.update(env_overrides)
    proc = subprocess.run(cmd, cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, "%s failed (%d):\n%s\n%s" % (
        " ".join(map(str, cmd)), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def requirement_lines(path):
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.strip().startswith("#")]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The collection tarball, built the way `make build` does, in a directory laid out like the repository."""
    top = tmp_path_factory.mktemp("ee")
    run(str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(top / ".build" / "dist"), str(ROOT))
    assert (top / ".build" / "dist" / TARBALL).is_file()
    return top


def test_meta_names_the_requirement_files():
    meta = yaml.safe_load((ROOT / "meta" / "execution-environment.yml").read_text())
    deps = meta["dependencies"]
    assert deps == {"python": "meta/ee-requirements.txt", "system": "meta/ee-bindep.txt"}
    for rel in deps.values():
        assert (ROOT / rel).is_file(), rel


def test_python_requirements_have_no_pins_and_no_ansible():
    lines = requirement_lines(ROOT / "meta" / "ee-requirements.txt")
    assert "kubernetes" in lines
    for line in lines:
        assert not re.search(r"[<>=!~;@ ]", line), "pinned or marked: %r" % line
        assert line.lower() not in ("ansible", "ansible-core", "ansible-base"), line


def test_bindep_file_parses():
    text = (ROOT / "meta" / "ee-bindep.txt").read_text()
    deps = Depends(text)
    names = [rule[0] for rule in deps._rules]
    assert "helm" in names
    assert deps.platform_profiles() is not None


def test_introspect_reads_the_collection_metadata(built, tmp_path):
    """ansible-builder introspect, on the tarball installed into an empty collections path, lists the
    collection's Python and system requirements and says they come from it."""
    dest = tmp_path / "collections"
    # (with ANSIBLE_COLLECTIONS_PATH at the empty path, or ansible-galaxy finds the working tree's link there)
    run(str(BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(dest),
        str(built / ".build" / "dist" / TARBALL), ANSIBLE_COLLECTIONS_PATH=str(dest))
    assert (dest / "ansible_collections" / "calico_ops" / "lifecycle" / "meta" / "execution-environment.yml").is_file()
    proc = run(str(BIN / "ansible-builder"), "introspect", "--sanitize", str(dest))
    data = yaml.safe_load(proc.stdout)
    python = [line for line in data["python"] if "calico_ops.lifecycle" in line]
    system = [line for line in data["system"] if "calico_ops.lifecycle" in line]
    assert any(line.startswith("kubernetes") for line in python), data["python"]
    assert any(line.startswith("helm") for line in system), data["system"]


def test_sample_definition_builds_a_context(built):
    definition = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    assert definition["version"] == 3
    base = definition["images"]["base_image"]["name"]
    assert re.search(r":[A-Za-z0-9._-]+$", base) and not base.endswith(":latest"), base
    files = definition["additional_build_files"]
    assert [f["src"] for f in files] == [".build/dist/" + TARBALL], "the sample names another version than galaxy.yml"

    (built / "execution-environment.yml").write_text((ROOT / "execution-environment.yml").read_text())
    run(str(BIN / "ansible-builder"), "create", "-f", "execution-environment.yml", "-c", "context",
        "--output-filename", "Containerfile", cwd=built)
    context = built / "context"
    containerfile = (context / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="%s"' % base in containerfile
    assert "ansible-galaxy collection install" in containerfile
    assert "COPY _build/collections/ /build/collections/" in containerfile
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert requirements["collections"] == [{"name": "/build/collections/" + TARBALL, "type": "file"}]
    copied = context / "_build" / "collections" / TARBALL
    assert copied.read_bytes() == (built / ".build" / "dist" / TARBALL).read_bytes()
    with tarfile.open(str(copied)) as tar:
        assert "meta/execution-environment.yml" in tar.getnames()
