"""The layers of plugins/module_utils (docs/architecture.md), checked on the imports themselves:

* ``k8s`` - the Kubernetes layer: the client and what every request needs - imports no other package of this
  collection;
* ``objects`` - the object jobs on it (server-side apply, merge patch, field ownership, several objects read) -
  imports only ``k8s``;
* the shared layer - ``calico`` (Calico: versions, releases, facts), ``platform`` (which platform, and its facts),
  ``records`` (durable records) - imports only ``k8s``, ``objects`` and each other, without a cycle;
* every other package is one job (a feature) and imports only the layers below: no feature package imports
  another;
* nothing in module_utils imports the plugins above it (modules, action or filter plugins).
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MU = ROOT / "plugins" / "module_utils"
BASE = {"k8s"}
OBJECTS = {"objects"}
SHARED = {"calico", "platform", "records"}
PACKAGES = sorted(p.name for p in MU.iterdir() if (p / "__init__.py").is_file())
IMPORT = re.compile(r"^\s*(?:from|import)\s+ansible_collections\.calico_ops\.lifecycle\.plugins\.([a-z_]+)"
                    r"(?:\.([a-z0-9_]+))?", re.M)


def imports():
    """{package: {(plugins folder, package or module), ...}} of every file under module_utils/<package>/."""
    out = {}
    for package in PACKAGES:
        found = set()
        for path in (MU / package).glob("*.py"):
            found |= set(IMPORT.findall(path.read_text()))
        out[package] = found
    return out


def test_the_packages_are_the_documented_ones():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    assert BASE | OBJECTS | SHARED <= set(PACKAGES)
    assert [p for p in PACKAGES if f"{p}/" not in doc] == [], "a package docs/architecture.md does not draw"


def test_nothing_below_imports_above():
    above = {package: sorted(f"plugins/{folder}/{name}" for folder, name in found if folder != "module_utils")
             for package, found in imports().items()}
    assert {p: a for p, a in above.items() if a} == {}


def test_the_kubernetes_layer_imports_no_other_package():
    found = {name for folder, name in imports()["k8s"] if folder == "module_utils"} & set(PACKAGES)
    assert found <= BASE, found


def test_the_object_jobs_import_only_the_kubernetes_layer():
    for package in OBJECTS:
        found = {name for folder, name in imports()[package] if folder == "module_utils"} & set(PACKAGES)
        assert found - {package} <= BASE, (package, found)


def test_the_kubernetes_layer_holds_no_job_on_objects():
    """apply, merge patch, field ownership and reads of several objects are ``objects/``, not ``k8s/``."""
    assert not [f.name for f in (MU / "k8s").glob("*.py")
                if f.stem in ("apply", "merge_patch", "field_ownership", "objects", "read")]


def test_the_shared_layer_imports_only_the_layers_below_and_itself_without_a_cycle():
    graph = {p: {name for folder, name in imports()[p] if folder == "module_utils" and name in PACKAGES} - {p}
             for p in SHARED}
    assert {p: sorted(d - BASE - OBJECTS - SHARED) for p, d in graph.items() if d - BASE - OBJECTS - SHARED} == {}
    shared = {p: d & SHARED for p, d in graph.items()}
    for start in shared:  # no cycle: following the edges from a package never comes back to it
        seen, todo = set(), list(shared[start])
        while todo:
            node = todo.pop()
            assert node != start, f"import cycle through {start}"
            if node not in seen:
                seen.add(node)
                todo += list(shared[node])


def test_no_feature_package_imports_another():
    features = set(PACKAGES) - BASE - OBJECTS - SHARED
    assert features >= {"preflight", "services_endpoint", "kube_proxy", "upgrade", "connectivity"}
    sideways = {p: sorted({name for folder, name in imports()[p] if folder == "module_utils"} & (features - {p}))
                for p in features}
    assert {p: s for p, s in sideways.items() if s} == {}
