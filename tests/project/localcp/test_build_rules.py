"""The wrapper-module rules of the harness's Go build (pure functions)."""

from localcp import build

GOMOD = """module k8s.io/kubernetes

go 1.24.0

godebug default=go1.24

require (
\tgithub.com/foo/bar v1.2.3
\tgo.etcd.io/etcd/server/v3 v3.5.21 // indirect
\tk8s.io/api v0.0.0
\tk8s.io/apimachinery v0.0.0
\tk8s.io/kms v0.0.0 // indirect
\tk8s.io/klog/v2 v2.130.1
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/apimachinery => ./staging/src/k8s.io/apimachinery
)
"""


def test_staging_replaces_come_from_v0_0_0_requires_only():
    assert build.staging_replaces(GOMOD, "v0.33.13") == [
        "replace k8s.io/api => k8s.io/api v0.33.13",
        "replace k8s.io/apimachinery => k8s.io/apimachinery v0.33.13",
        "replace k8s.io/kms => k8s.io/kms v0.33.13",
    ]


def test_go_directive_and_godebug_are_copied():
    assert build.go_directive(GOMOD) == "1.24.0"
    assert build.godebug_lines(GOMOD) == ["godebug default=go1.24"]


def test_third_party_dir_names_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("CALICO_OPS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CALICO_OPS_THIRD_PARTY_DIR", str(tmp_path / "tp"))
    monkeypatch.setattr(build, "__file__", str(tmp_path / "repo" / "tests" / "localcp" / "build.py"))
    try:
        build.third_party_dir()
    except build.BuildError as exc:
        assert str(tmp_path / "tp") in str(exc) and "CALICO_OPS_THIRD_PARTY_DIR" in str(exc)
    else:
        raise AssertionError("no BuildError")
    (tmp_path / "tp").mkdir()
    for name in ("build-tigera-operator.sh", "build-calico-component.sh"):
        (tmp_path / "tp" / name).write_text("#!/bin/sh\n")
    assert build.third_party_dir() == (tmp_path / "tp").resolve()
    # remembered for a clone elsewhere
    assert (tmp_path / "cache" / "third-party.source").read_text() == str((tmp_path / "tp").resolve())


def test_unknown_operator_version_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("CALICO_OPS_CACHE", str(tmp_path))
    try:
        build.build_operator("v9.9.9")
    except build.BuildError as exc:
        assert "v9.9.9" in str(exc) and "v1.40.7" in str(exc)
    else:
        raise AssertionError("no BuildError")


def test_cache_root_honours_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CALICO_OPS_CACHE", str(tmp_path / "c"))
    assert build.cache_root() == tmp_path / "c"
    monkeypatch.delenv("CALICO_OPS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert build.cache_root() == tmp_path / "x" / "calico_ops"


def test_missing_go_is_reported_by_name(monkeypatch, tmp_path):
    monkeypatch.setenv("CALICO_OPS_CACHE", str(tmp_path))
    monkeypatch.setenv("CALICO_OPS_GO", str(tmp_path / "no-such-go"))
    try:
        build.build_kwok()
    except build.BuildError as exc:
        assert "go: the Go toolchain was not found" in str(exc)
        assert "no-such-go" in str(exc)
    else:
        raise AssertionError("build_kwok() did not fail without Go")


def test_a_cached_binary_is_not_built_again(monkeypatch, tmp_path):
    monkeypatch.setenv("CALICO_OPS_CACHE", str(tmp_path))
    monkeypatch.setenv("CALICO_OPS_GO", str(tmp_path / "no-such-go"))  # any build attempt would fail
    d = tmp_path / f"kwok-{build.KWOK_VERSION}"
    d.mkdir()
    (d / "kwok").write_text("#!/bin/sh\n")
    (d / "kwok").chmod(0o755)
    assert build.build_kwok() == d
