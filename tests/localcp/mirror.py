"""Where the Calico release files served on 127.0.0.1 come from.

In order: the folder named by ``CALICO_OPS_RELEASES_DIR``; ``../shared/calico-releases`` beside the
repository; the folder an earlier run on this machine found (remembered in the cache); else the same files downloaded once from the real release addresses into the cache (so the suite
also runs from a lone clone of the repository). The project never copies these files into its own tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from .build import cache_root, remember_source

VERSIONS = ["v3.27.5", "v3.29.7", "v3.31.4"]
FILES = ["operator-crds.yaml", "tigera-operator.yaml", "custom-resources.yaml", "calico.yaml",
         "calico-typha.yaml", "canal.yaml", "calico-policy-only.yaml", "calico-etcd.yaml", "canal-etcd.yaml",
         "calicoctl.yaml", "calicoctl-etcd.yaml"]
EXTRA = {"v3.31.4": ["custom-resources-bpf.yaml", "alp/istio-inject-configmap-1.10.yaml",
                     "alp/istio-inject-configmap-1.15.yaml"]}
MANIFEST_URL = "https://raw.githubusercontent.com/projectcalico/calico"
CHART_URL = "https://docs.tigera.io/calico/charts"

REPO_ROOT = Path(__file__).resolve().parents[2]


def _complete(folder: Path) -> bool:
    return (folder / "charts" / "index.yaml").is_file() and all(
        (folder / v / "manifests" / "operator-crds.yaml").is_file() for v in VERSIONS)


def local_source_dir(explicit: Path | None = None) -> Path | None:
    """The release files already on this machine (no download), or None."""
    candidates = _candidates(explicit)
    return next((c.resolve() for c in candidates if _complete(c)), None)


def _candidates(explicit: Path | None = None) -> list:
    candidates = []
    if explicit:
        candidates.append(Path(explicit))
    if os.environ.get("CALICO_OPS_RELEASES_DIR"):
        candidates.append(Path(os.environ["CALICO_OPS_RELEASES_DIR"]))
    candidates.append(REPO_ROOT.parent / "shared" / "calico-releases")
    # the folder a run of another checkout on this machine found (a clone elsewhere, e.g. under /tmp, has no
    # ../shared beside it)
    remembered = cache_root() / "calico-releases.source"
    if remembered.is_file():
        candidates.append(Path(remembered.read_text().strip()))
    return candidates


def source_dir(explicit: Path | None = None) -> Path:
    candidates = _candidates(explicit)
    remembered = cache_root() / "calico-releases.source"
    for c in candidates:
        if _complete(c):
            return remember_source(remembered, c)
    try:
        return download(cache_root() / "calico-releases")
    except OSError as exc:
        tried = ", ".join(str(c) for c in candidates)
        raise RuntimeError(f"mirror: no Calico release files: none in {tried}, and downloading them from "
                           f"{MANIFEST_URL} failed ({exc}); set CALICO_OPS_RELEASES_DIR to a folder laid out "
                           "as <version>/manifests/<file> plus charts/") from exc


def _fetch(url: str, dest: Path) -> None:
    if dest.is_file() and dest.stat().st_size > 0:
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    print(f"[localcp] downloading {url}", file=sys.stderr, flush=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    with urllib.request.urlopen(url, timeout=120) as resp, open(tmp, "wb") as out:
        out.write(resp.read())
    os.replace(tmp, dest)


def download(folder: Path) -> Path:
    """Download the release files once from the real addresses (same layout as shared/calico-releases)."""
    if _complete(folder):
        return folder
    for v in VERSIONS:
        for f in FILES + EXTRA.get(v, []):
            _fetch(f"{MANIFEST_URL}/{v}/manifests/{f}", folder / v / "manifests" / f)
        _fetch(f"{CHART_URL}/tigera-operator-{v}.tgz", folder / "charts" / f"tigera-operator-{v}.tgz")
    from .build import build_helm
    helm = build_helm() / "helm"
    subprocess.run([str(helm), "repo", "index", str(folder / "charts")], check=True)
    return folder
