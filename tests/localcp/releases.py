"""The data plane of a Calico release an upgrade starts from (versions.UPGRADE_SOURCE_DATAPLANES), built from
../shared/third_party's monorepo tarball of the release into ``<cache>/calico-node-<release>``: calico-node (the
binary of the calico/node image: ``-startup``, ``-felix``, ...), calico-typha and Calico's CNI plugin (``calico``,
``calico-ipam``), as v3.31.4's (build.build_dataplane) but without BPF programs: these releases run the Iptables
data plane here. Felix links libbpf with cgo; v3.27 and v3.29 carry libbpf in their tree
(``felix/bpf-gpl/include/libbpf``), built here as the static library the link names, as Calico's Makefile does.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

from . import build
from .versions import UPGRADE_SOURCE_BINARIES, UPGRADE_SOURCE_DATAPLANES

PACKAGE = "github.com/projectcalico/calico"
MINUTES = 6  # cold, on this machine's 2 cores, with v3.31.4's module and build caches warm (measured 2026-12-07: 4)


def release_dir(release: str) -> Path:
    return build.cache_root() / f"calico-node-{release}"


def have(release: str) -> bool:
    d = release_dir(release)
    return (d / ".complete").is_file() and build._have(d, list(UPGRADE_SOURCE_BINARIES))


def build_release(release: str) -> Path:
    """The release's data plane, built once (``.complete`` marks a finished build)."""
    if release not in UPGRADE_SOURCE_DATAPLANES:
        raise build.BuildError(f"calico-node {release}: not a release the harness builds "
                               f"({', '.join(sorted(UPGRADE_SOURCE_DATAPLANES))})")
    if have(release):
        return release_dir(release)
    with build._BuildLock(release_dir(release).name):
        if not have(release):
            _build(release, release_dir(release))
    return release_dir(release)


def _source(release: str) -> Path:
    """The release's tree, extracted once under the cache's build directory."""
    work = build.cache_root() / "build" / f"calico-{release}-source"
    src = work / f"calico-{release.lstrip('v')}"
    if not (src / ".extracted").is_file():
        tarball = build.third_party_dir() / f"calico-{release}.tar.gz"
        if not tarball.is_file():
            raise build.BuildError(f"calico-node {release}: {tarball} not found (../shared/third_party holds the "
                                   "source of every Calico release the tests run)")
        if src.exists():
            shutil.rmtree(src)
        work.mkdir(parents=True, exist_ok=True)
        build.log(f"extract {tarball.name} into {work}")
        with tarfile.open(tarball) as tar:
            tar.extractall(work, filter="tar")
        (src / ".extracted").write_text(release + "\n")
    return src


def _build(release: str, bindir: Path) -> None:
    spec = UPGRADE_SOURCE_DATAPLANES[release]
    missing = [t for t in ("make", "gcc") if not shutil.which(t)]
    if missing:
        raise build.BuildError(f"calico-node {release}: {', '.join(missing)} not found (Debian: apt-get install "
                               f"{' '.join(build.DATAPLANE_DEBIAN_PACKAGES)}; `make binaries` does it)")
    src = _source(release)
    libbpf = src / "felix" / "bpf-gpl" / "include" / "libbpf" / "src"
    if not (libbpf / "amd64" / "libbpf.a").is_file():
        build.log(f"compile libbpf of calico {release} (its own tree)")
        proc = subprocess.run(["make", "BUILD_STATIC_ONLY=1", "OBJDIR=amd64"], cwd=libbpf, capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            raise build.BuildError(f"libbpf of calico {release} failed (exit {proc.returncode}):\n"
                                   f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    staging = bindir.with_name(bindir.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    flags = " ".join(f"-X {PACKAGE}/{var}={release}" for var in spec["version_vars"]) + " -s -w"
    env = {"GOTOOLCHAIN": spec["go"], "GOFLAGS": "-mod=mod -buildvcs=false", "CGO_ENABLED": "1"}
    for name, package in (("calico-node", "./node/cmd/calico-node"), ("calico-typha", "./typha/cmd/calico-typha")):
        build._run([build._go(), "build", "-v", "-o", str(staging / name), "-ldflags", flags, package], src,
                   f"compile {name} {release}", env=env, progress=True)
    build._run([build._go(), "build", "-o", str(staging / "calico"), "-ldflags", "-s -w", "./cni-plugin/cmd/calico"],
               src, f"compile Calico's CNI plugin {release} (calico, calico-ipam)", env=dict(env, CGO_ENABLED="0"))
    (staging / "calico-ipam").symlink_to("calico")
    (staging / ".complete").write_text(release + "\n")
    if bindir.exists():
        shutil.rmtree(bindir)
    staging.rename(bindir)


def build_all(calico: bool = True, only: str = "all") -> dict:
    """``build.build_all`` and, but for the demo, the data plane of every upgrade source release: name -> path, a
    release's binaries as ``<name>@<release>`` (``calico-node@v3.29.7``)."""
    paths = build.build_all(calico=calico, only=only)
    if not calico or only == "demo":
        return paths
    for release in sorted(UPGRADE_SOURCE_DATAPLANES):
        if not have(release):
            build.log(f"build: data plane {release} (cold: ~{MINUTES} min; calico-node, calico-typha and the CNI "
                      "plugin of the release an upgrade starts from)")
        bindir = build_release(release)
        for name in UPGRADE_SOURCE_BINARIES:
            paths[f"{name}@{release}"] = bindir / name
    return paths


def main(argv=None) -> int:
    """``python -m localcp build``: build (or find) every binary and print name and path."""
    import argparse
    parser = argparse.ArgumentParser(description=build.__doc__)
    parser.add_argument("--no-calico", action="store_true",
                        help="only the control plane (no Tigera operators, no Calico components)")
    parser.add_argument("--only", choices=["all", "demo"], default="all",
                        help="demo: what `make demo` needs (not the older operators, calicoctl, helm, the releases "
                             "upgrades start from)")
    args = parser.parse_args(argv)
    try:
        for name, path in build_all(calico=not args.no_calico, only=args.only).items():
            print(f"{name}\t{path}")
    except build.BuildError as exc:
        build.log(f"build failed: {exc}")
        return 1
    return 0
