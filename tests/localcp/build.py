"""Build the local control plane's binaries from published Go modules, once, into a cache.

Every binary is built from a pinned module version with ``GOTOOLCHAIN=local``:

* kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd from a generated wrapper
  module that requires ``k8s.io/kubernetes`` and replaces each staging module its go.mod requires at
  ``v0.0.0`` with the published ``v0.<minor>.<patch>`` (the list is read from the downloaded go.mod);
  kube-proxy from the same wrapper, into a directory of its own (only nodes with a network run it);
* kwok and helm with a plain ``go install`` at their release tags;
* the Tigera operator from a wrapper module that copies its non-local replace directives.

A component whose binaries are all in ``<cache>/<component>-<version>/`` is not built again.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .versions import (CALICO_COMPONENTS, CALICO_GO_TOOLCHAIN, CALICO_VERSION, DATAPLANE_BINARIES, ETCD_MODULE,
                       HELM_MODULE, HELM_VERSION, KUBERNETES_VERSION, KWOK_MODULE, KWOK_VERSION, OPERATOR_VERSION,
                       OPERATOR_VERSIONS)


class BuildError(RuntimeError):
    """A component could not be built; the message says which and why."""


def cache_root() -> Path:
    """Where binaries and downloaded files are kept, outside the repository."""
    env = os.environ.get("CALICO_OPS_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "calico_ops"


def log(msg: str) -> None:
    print(f"[localcp] {msg}", file=sys.stderr, flush=True)


class _BuildLock:
    """One build of a component at a time on this machine: test workers, Molecule and `make` may all start a
    control plane at once, and each would build what the cache lacks into the same work directory. The second
    waits (an exclusive flock on a file of the cache) and then finds the binary built."""

    def __init__(self, name: str):
        self.path = cache_root() / "build" / f"{name}.lock"
        self.fd = None

    def __enter__(self):
        import fcntl
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = open(self.path, "w")
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            log(f"{self.path.stem}: another process is building it; waiting for that build")
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        import fcntl
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.fd.close()


def _go_env() -> dict:
    env = dict(os.environ)
    env["GOTOOLCHAIN"] = "local"
    env["CGO_ENABLED"] = "0"
    env.setdefault("GOFLAGS", "")
    env["GOFLAGS"] = (env["GOFLAGS"] + " -mod=mod").strip()
    return env


def _go() -> str:
    """The go command: ``CALICO_OPS_GO`` if set, else ``go`` on PATH, else /usr/local/go/bin/go."""
    explicit = os.environ.get("CALICO_OPS_GO")
    if explicit:
        go = explicit if os.access(explicit, os.X_OK) else None
    else:
        go = shutil.which("go")
        if not go and os.access("/usr/local/go/bin/go", os.X_OK):
            go = "/usr/local/go/bin/go"
    if not go:
        raise BuildError(f"go: the Go toolchain was not found ({explicit or 'no `go` on PATH'}); install Go "
                         ">= 1.24 (https://go.dev/dl or your distribution) and run again")
    return go


def _run(cmd: list, cwd: Path, what: str, progress: bool = False, env: dict | None = None) -> str:
    """Run a go command; stream a progress count when asked; raise BuildError with its last lines."""
    log(f"{what}: {' '.join(str(c) for c in cmd)}")
    start = time.monotonic()
    full_env = _go_env()
    full_env.update(env or {})
    proc = subprocess.Popen(cmd, cwd=str(cwd), env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    count = 0
    last = start
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())
        if len(lines) > 400:
            del lines[:200]
        count += 1
        now = time.monotonic()
        if progress and now - last >= 15:
            log(f"{what}: {count} packages compiled, {int(now - start)}s, last {line.strip()}")
            last = now
    rc = proc.wait()
    if rc != 0:
        tail = "\n".join(lines[-40:])
        raise BuildError(f"{what} failed (exit {rc}):\n{tail}")
    log(f"{what}: done in {int(time.monotonic() - start)}s")
    return "\n".join(lines)


def _module_gomod(module: str, version: str, workdir: Path) -> Path:
    out = _run([_go(), "mod", "download", "-json", f"{module}@{version}"], workdir,
               f"download {module}@{version}")
    try:
        info = json.loads(out[out.index("{"):])
    except (ValueError, json.JSONDecodeError) as exc:
        raise BuildError(f"download {module}@{version}: unreadable answer: {out[-2000:]}") from exc
    if info.get("Error"):
        raise BuildError(f"download {module}@{version}: {info['Error']}")
    return Path(info["GoMod"])


def staging_replaces(gomod_text: str, staging_version: str) -> list:
    """The ``k8s.io/...`` modules a k8s.io/kubernetes go.mod requires at v0.0.0, as replace lines."""
    names = sorted(set(re.findall(r"^\s*(k8s\.io/[A-Za-z0-9._/-]+)\s+v0\.0\.0\s*(?://.*)?$",
                                  gomod_text, re.M)))
    return [f"replace {n} => {n} {staging_version}" for n in names]


def godebug_lines(gomod_text: str) -> list:
    return [line for line in gomod_text.splitlines() if line.startswith("godebug ")]


def go_directive(gomod_text: str) -> str:
    m = re.search(r"^go\s+(\S+)", gomod_text, re.M)
    return m.group(1) if m else "1.24.0"


def _check_go_version(required: str, component: str) -> None:
    out = subprocess.run([_go(), "env", "GOVERSION"], capture_output=True, text=True,
                         env=_go_env(), check=False).stdout.strip()
    have = tuple(int(x) for x in re.findall(r"\d+", out)[:3])
    need = tuple(int(x) for x in re.findall(r"\d+", required)[:3])
    if have < need:
        raise BuildError(f"{component}: needs Go {required}, the installed Go is {out}; "
                         "install a newer Go (GOTOOLCHAIN=local forbids downloading one)")


def _have(bindir: Path, names: list) -> bool:
    return all((bindir / n).is_file() and os.access(bindir / n, os.X_OK) for n in names)


def _finish(tmpdir: Path, bindir: Path, names: list) -> None:
    """Move built binaries into place atomically (a half-built cache dir never looks complete)."""
    bindir.parent.mkdir(parents=True, exist_ok=True)
    staging = bindir.with_name(bindir.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    for n in names:
        shutil.copy2(tmpdir / n, staging / n)
    if bindir.exists():
        shutil.rmtree(bindir)
    staging.rename(bindir)


def kubernetes_dir() -> Path:
    return cache_root() / f"kubernetes-{KUBERNETES_VERSION}"


KUBE_BINARIES = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd"]


def build_kubernetes() -> Path:
    bindir = kubernetes_dir()
    if _have(bindir, KUBE_BINARIES):
        return bindir
    with _BuildLock(bindir.name):
        return bindir if _have(bindir, KUBE_BINARIES) else _build_kubernetes(bindir)


def _build_kubernetes(bindir: Path) -> Path:
    version = KUBERNETES_VERSION
    work = cache_root() / "build" / f"kubernetes-{version}"
    work.mkdir(parents=True, exist_ok=True)
    log(f"building Kubernetes {version} and etcd from Go modules into {bindir} (cold: tens of minutes)")
    gomod = _module_gomod("k8s.io/kubernetes", version, work).read_text()
    _check_go_version(go_directive(gomod), "k8s.io/kubernetes")
    major, minor, patch = version.lstrip("v").split(".")
    staging_version = f"v0.{minor}.{patch}"
    replaces = staging_replaces(gomod, staging_version)
    if len(replaces) < 20:
        raise BuildError(f"k8s.io/kubernetes {version}: found only {len(replaces)} staging modules in its "
                         "go.mod; the wrapper module would not resolve")
    lines = ["module calico-ops.local/kubebuild", "", f"go {go_directive(gomod)}", ""]
    lines += godebug_lines(gomod) + [""]
    lines += [f"require k8s.io/kubernetes {version}", ""] + replaces + [""]
    (work / "go.mod").write_text("\n".join(lines))
    ldflags = _kube_ldflags(version)
    out = work / "bin"
    out.mkdir(exist_ok=True)
    pkgs = [f"k8s.io/kubernetes/cmd/{n}" for n in KUBE_BINARIES if n != "etcd"]
    _run([_go(), "mod", "download", "k8s.io/kubernetes"], work, "resolve module graph")
    _run([_go(), "build", "-v", "-trimpath", "-tags", "selinux,notest", "-ldflags", ldflags,
          "-o", str(out) + "/"] + pkgs, work, "compile kubernetes", progress=True)
    _run([_go(), "build", "-v", "-trimpath", "-ldflags", "-s -w", "-o", str(out / "etcd"),
          ETCD_MODULE], work, "compile etcd", progress=True)
    _finish(out, bindir, KUBE_BINARIES)
    return bindir


def kube_proxy_dir() -> Path:
    return cache_root() / f"kube-proxy-{KUBERNETES_VERSION}"


def build_kube_proxy() -> Path:
    """kube-proxy of the control plane's Kubernetes release (``k8s.io/kubernetes/cmd/kube-proxy``), built in the
    wrapper module of the other Kubernetes binaries (build_kubernetes first): the pod runner runs it behind the
    kubeadm shape's kube-proxy pods on nodes that have a network."""
    bindir = kube_proxy_dir()
    if _have(bindir, ["kube-proxy"]):
        return bindir
    build_kubernetes()
    with _BuildLock(bindir.name):
        if _have(bindir, ["kube-proxy"]):
            return bindir
        work = cache_root() / "build" / f"kubernetes-{KUBERNETES_VERSION}"
        out = work / "bin-kube-proxy"
        out.mkdir(parents=True, exist_ok=True)
        log(f"building kube-proxy {KUBERNETES_VERSION} into {bindir}")
        _run([_go(), "build", "-v", "-trimpath", "-tags", "selinux,notest", "-ldflags",
              _kube_ldflags(KUBERNETES_VERSION), "-o", str(out / "kube-proxy"), "k8s.io/kubernetes/cmd/kube-proxy"],
             work, "compile kube-proxy", progress=True)
        _finish(out, bindir, ["kube-proxy"])
    return bindir


def _kube_ldflags(version: str) -> str:
    major, minor, _patch = version.lstrip("v").split(".")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    xs = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        xs += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={major}",
               f"-X {pkg}.gitMinor={minor}", f"-X {pkg}.gitCommit=calico-ops-build",
               f"-X {pkg}.gitTreeState=clean", f"-X {pkg}.buildDate={stamp}"]
    return "-s -w " + " ".join(xs)


def _go_install(module: str, pkg: str, version: str, name: str, ldflags: str = "-s -w") -> Path:
    bindir = cache_root() / f"{name}-{version}"
    if _have(bindir, [name]):
        return bindir
    with _BuildLock(bindir.name):
        if _have(bindir, [name]):
            return bindir
        return _go_install_locked(module, pkg, version, name, ldflags, bindir)


def _go_install_locked(module, pkg, version, name, ldflags, bindir: Path) -> Path:
    work = cache_root() / "build" / f"{name}-{version}"
    work.mkdir(parents=True, exist_ok=True)
    gomod = _module_gomod(module, version, work).read_text()
    _check_go_version(go_directive(gomod), module)
    env_bin = work / "bin"
    env_bin.mkdir(exist_ok=True)
    log(f"building {name} {version} with go install")
    cmd = [_go(), "install", "-v", "-trimpath", "-ldflags", ldflags, f"{pkg}@{version}"]
    env = _go_env()
    env["GOBIN"] = str(env_bin)
    env["GOFLAGS"] = ""  # go install pkg@version refuses -mod
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=str(work), env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"go install {pkg}@{version} failed (exit {proc.returncode}):\n"
                         + "\n".join((proc.stdout + proc.stderr).splitlines()[-40:]))
    log(f"{name}: done in {int(time.monotonic() - start)}s")
    built = env_bin / name
    if not built.exists():
        cands = list(env_bin.iterdir())
        if len(cands) != 1:
            raise BuildError(f"go install {pkg}: expected one binary in {env_bin}, found {cands}")
        cands[0].rename(built)
    _finish(env_bin, bindir, [name])
    return bindir


def kwok_module_dir() -> Path:
    """kwok's module in the Go module cache (building kwok downloaded it): its stage files are read there."""
    try:
        out = subprocess.run([_go(), "env", "GOMODCACHE"], capture_output=True, text=True, env=_go_env(),
                             timeout=60, check=False).stdout.strip()
    except (BuildError, OSError, subprocess.SubprocessError):
        out = ""
    return Path(out or Path.home() / "go" / "pkg" / "mod") / "sigs.k8s.io" / f"kwok@{KWOK_VERSION}"


def build_kwok() -> Path:
    return _go_install(KWOK_MODULE, "sigs.k8s.io/kwok/cmd/kwok", KWOK_VERSION, "kwok")


def build_helm() -> Path:
    ver = HELM_VERSION
    flags = f"-s -w -X helm.sh/helm/v3/internal/version.version={ver}"
    return _go_install(HELM_MODULE, "helm.sh/helm/v3/cmd/helm", ver, "helm", flags)


def remember_source(memo: Path, folder: Path) -> Path:
    """Note in the cache where a folder of ../shared was found (a clone elsewhere has no ../shared beside it)."""
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(str(folder.resolve()))
    except OSError:
        pass
    return folder.resolve()


def third_party_dir() -> Path:
    """Release sources the Go module proxy refuses (Tigera operator, its API modules, Calico's monorepo) with
    their build scripts: ``CALICO_OPS_THIRD_PARTY_DIR``, ``../shared/third_party`` beside the repository, or
    the folder an earlier run on this machine found (remembered in the cache, for clones elsewhere)."""
    remembered = cache_root() / "third-party.source"
    candidates = []
    if os.environ.get("CALICO_OPS_THIRD_PARTY_DIR"):
        candidates.append(Path(os.environ["CALICO_OPS_THIRD_PARTY_DIR"]))
    candidates.append(Path(__file__).resolve().parents[2].parent / "shared" / "third_party")
    if remembered.is_file():
        candidates.append(Path(remembered.read_text().strip()))
    for c in candidates:
        if (c / "build-tigera-operator.sh").is_file() and (c / "build-calico-component.sh").is_file():
            return remember_source(remembered, c)
    raise BuildError("third_party: the Tigera operator and Calico sources (github.com/tigera/operator and "
                     "github.com/projectcalico/calico are refused by the Go module proxy) were looked for in "
                     + ", ".join(str(c) for c in candidates)
                     + "; set CALICO_OPS_THIRD_PARTY_DIR to a folder with build-tigera-operator.sh")


def _script(script: str, args: list, what: str, env: dict | None = None, progress: bool = False) -> None:
    """Run one of third_party's build scripts with the Go found here first on PATH. ``progress``: every 15 s a
    line with the time so far and the script's last line (a long build shows it moves)."""
    env_path = os.pathsep.join([str(Path(_go()).parent), os.environ.get("PATH", "")])
    cmd = ["bash", str(third_party_dir() / script)] + [str(a) for a in args]
    log(f"{what}: {' '.join(cmd)}" + ("" if progress else " (a few minutes on 2 cores)"))
    start = time.monotonic()
    full_env = _go_env()
    full_env["PATH"] = env_path
    full_env.update(env or {})
    proc = subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, last = [], start
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())
        if len(lines) > 400:
            del lines[:200]
        now = time.monotonic()
        if progress and now - last >= 15:
            log(f"{what}: {int(now - start)}s so far; now: {line.strip()[:160]}")
            last = now
    if proc.wait() != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n" + "\n".join(lines[-40:]))
    log(f"{what}: done in {int(time.monotonic() - start)}s")


def operator_dir(version: str = OPERATOR_VERSION) -> Path:
    return cache_root() / f"tigera-operator-{version}"


def build_operator(version: str = OPERATOR_VERSION) -> Path:
    """One Tigera operator release, with third_party's build-tigera-operator.sh, into the cache."""
    if version not in OPERATOR_VERSIONS:
        raise BuildError(f"tigera-operator {version}: no sources for it (known: {', '.join(OPERATOR_VERSIONS)})")
    bindir = operator_dir(version)
    if _have(bindir, ["operator"]):
        return bindir
    with _BuildLock(bindir.name):
        if not _have(bindir, ["operator"]):
            _build_operator(version, bindir)
    return bindir


def _build_operator(version: str, bindir: Path) -> None:
    work = cache_root() / "build" / f"tigera-operator-{version}"
    out = cache_root() / "build" / f"out-op-{version}"
    out.mkdir(parents=True, exist_ok=True)
    _script("build-tigera-operator.sh", [version, out / "operator", work], f"compile tigera-operator {version}")
    _finish(out, bindir, ["operator"])


def calico_dir() -> Path:
    return cache_root() / f"calico-{CALICO_VERSION}"


def build_calico_components(demo: bool = False) -> Path:
    """calicoctl, calico-kube-controllers and calico-apiserver of Calico v3.31.4, with third_party's
    build-calico-component.sh (one extracted, edited source tree shared by the three builds). ``demo``: the two
    the demo's install runs (not calicoctl, which only the upgrade's migrations use)."""
    bindir = calico_dir()
    names = [n for n in CALICO_COMPONENTS if not (demo and n == "calicoctl")]
    if _have(bindir, names):
        return bindir
    with _BuildLock(bindir.name):
        if not _have(bindir, names):
            _build_calico_components(bindir, names)
    return bindir


def _build_calico_components(bindir: Path, names: list) -> None:
    work = cache_root() / "build" / f"calico-{CALICO_VERSION}"
    out = cache_root() / "build" / "out-calico"
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        if not _have(out, [name]):
            _script("build-calico-component.sh", [name, out / name, work], f"compile calico {name}")
    _finish(out, bindir, names)


def dataplane_dir() -> Path:
    return cache_root() / f"calico-node-{CALICO_VERSION}"


# Debian packages the data plane's build needs (build-calico-felix.sh's header says why each): `make binaries`
# installs the missing ones (tests/tools/debian-packages.sh); the build only checks, naming what is missing.
DATAPLANE_DEBIAN_PACKAGES = ("clang-19", "llvm-19", "libelf-dev", "zlib1g-dev", "libpcap-dev", "make", "gcc")


def build_dataplane() -> Path:
    """Calico v3.31.4's data plane, built once into ``<cache>/calico-node-v3.31.4``: calico-node (``-startup``,
    ``-felix``, ``-allocate-tunnel-addrs``, ... as the calico/node image runs them), calico-typha, Felix alone,
    Calico's ``calico-bpf`` debug tool and every BPF object (third_party's build-calico-felix.sh), and Calico's
    CNI plugin (``cni-plugin/cmd/calico``, the one binary that is both ``calico`` and ``calico-ipam``) from the
    same source tree. The objects' directory is compiled into the binaries (``-X ...bpfdefs.ObjectDir``), so they
    are built in place; ``.complete`` marks a finished build."""
    bindir = dataplane_dir()
    if (bindir / ".complete").is_file() and _have(bindir, list(DATAPLANE_BINARIES)):
        return bindir
    with _BuildLock(bindir.name):
        if not ((bindir / ".complete").is_file() and _have(bindir, list(DATAPLANE_BINARIES))):
            _build_dataplane(bindir)
    return bindir


def _build_dataplane(bindir: Path) -> None:
    missing = [t for t in ("clang-19", "llc-19", "make", "gcc") if not shutil.which(t)]
    if missing:
        raise BuildError(f"calico-node: {', '.join(missing)} not found (Debian: apt-get install "
                         f"{' '.join(DATAPLANE_DEBIAN_PACKAGES)}; `make binaries` does it)")
    work = cache_root() / "build" / f"calico-felix-{CALICO_VERSION}"
    src = work / f"calico-{CALICO_VERSION.lstrip('v')}"
    if not _have(bindir, ["calico-node", "calico-typha", "calico-felix", "calico-bpf"]) or not (
            bindir / "bpf").is_dir():
        # the BPF programs include <bpf/bpf_helpers.h>, which the Makefile's `-I ./libbpf/src/` does not give
        # (libbpf's tarball has the headers in src/, its `install_headers` puts them under bpf/): a directory
        # whose bpf/ is libbpf's src/, on clang's CPATH, gives that include path without editing the tree
        include = cache_root() / "build" / "libbpf-include"
        include.mkdir(parents=True, exist_ok=True)
        link = include / "bpf"
        if not link.is_symlink():
            link.symlink_to(src / "felix" / "bpf-gpl" / "libbpf" / "src")
        _script("build-calico-felix.sh", [bindir, work], "compile calico-node, calico-typha, Felix and its BPF "
                "programs (~300 objects; ~30 minutes cold on 2 cores)", env={"CPATH": str(include)},
                progress=True)
    env = {"GOTOOLCHAIN": CALICO_GO_TOOLCHAIN, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod -buildvcs=false"}
    _run([_go(), "build", "-o", str(bindir / "calico"), "-ldflags", "-s -w", "./cni-plugin/cmd/calico"], src,
         "compile Calico's CNI plugin (calico, calico-ipam)", env=env)
    ipam = bindir / "calico-ipam"
    if not ipam.is_symlink():
        ipam.symlink_to("calico")
    (bindir / ".complete").write_text(CALICO_VERSION + "\n")


# rough minutes of each build, cold, on this machine's 2 cores (measured 2026-11-28): only for the progress lines
BUILD_MINUTES = {"kubernetes": 8, "kube-proxy": 3, "kwok": 3, "helm": 3, "operator": 6, "calico components": 5, "data plane": 23}


def build_all(calico: bool = True, only: str = "all") -> dict:
    """Build (or find) every binary; return name -> path. ``calico``: also the Tigera operators
    (``operator-<version>``) and the Calico components. ``only="demo"``: what `make demo` needs - the control plane,
    the newest operator, calico-kube-controllers, calico-apiserver and the data plane (not the two older operators,
    calicoctl, helm). Before each build that the cache lacks, a line says which one of how many it is and what is
    left after it (a cold start takes most of an hour on 2 cores). kube-proxy is built for both: behind the kubeadm
    shape's DaemonSet on nodes with a network it is what serves Services until the eBPF install takes over."""
    demo = only == "demo"
    steps = [("kubernetes", lambda: _have(kubernetes_dir(), KUBE_BINARIES), build_kubernetes),
             ("kwok", lambda: _have(cache_root() / f"kwok-{KWOK_VERSION}", ["kwok"]), build_kwok)]
    # kube-proxy: the demo's install takes it away from nodes where it really served (nodes with a network)
    steps.append(("kube-proxy", lambda: _have(kube_proxy_dir(), ["kube-proxy"]), build_kube_proxy))
    if not demo:
        steps.append(("helm", lambda: _have(cache_root() / f"helm-{HELM_VERSION}", ["helm"]), build_helm))
    if calico:
        for version in ([OPERATOR_VERSION] if demo else OPERATOR_VERSIONS):
            steps.append((f"operator {version}", lambda v=version: _have(operator_dir(v), ["operator"]),
                          lambda v=version: build_operator(v)))
        names = [n for n in CALICO_COMPONENTS if not (demo and n == "calicoctl")]
        steps.append(("calico components", lambda: _have(calico_dir(), names),
                      lambda: build_calico_components(demo=demo)))
        steps.append(("data plane", lambda: (dataplane_dir() / ".complete").is_file() and _have(
            dataplane_dir(), list(DATAPLANE_BINARIES)), build_dataplane))
    todo = [name for name, have, _build in steps if not have()]
    done = {}
    for name, _have_it, build in steps:
        if name in todo:
            i = todo.index(name)
            left = todo[i + 1:]
            minutes = sum(BUILD_MINUTES.get(n.split(" v")[0], 5) for n in todo[i:])
            log(f"build {i + 1}/{len(todo)}: {name} (cold: ~{minutes} min left in all"
                + (f"; after it: {', '.join(left)}" if left else "") + ")")
        done[name] = build()
    paths = {}
    for n in KUBE_BINARIES:
        paths[n] = done["kubernetes"] / n
    paths["kwok"] = done["kwok"] / "kwok"
    if "kube-proxy" in done:
        paths["kube-proxy"] = done["kube-proxy"] / "kube-proxy"
    if "helm" in done:
        paths["helm"] = done["helm"] / "helm"
    if calico:
        for key, value in done.items():
            if key.startswith("operator "):
                paths[f"operator-{key.split()[1]}"] = value / "operator"
        for n in CALICO_COMPONENTS:
            if (done["calico components"] / n).is_file():
                paths[n] = done["calico components"] / n
        for n in DATAPLANE_BINARIES:
            paths[n] = done["data plane"] / n
    return paths
