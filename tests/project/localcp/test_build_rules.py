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

OPERATOR_GOMOD = """module github.com/tigera/operator

go 1.24.6

replace (
\tgithub.com/Azure/go-autorest => github.com/Azure/go-autorest v14.2.0+incompatible // comment
\tgithub.com/tigera/operator/api => ./api
)

replace github.com/imdario/mergo => github.com/imdario/mergo v0.3.16
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


def test_non_local_replaces_skip_directory_targets():
    assert build.non_local_replaces(OPERATOR_GOMOD) == [
        "replace github.com/Azure/go-autorest => github.com/Azure/go-autorest v14.2.0+incompatible",
        "replace github.com/imdario/mergo => github.com/imdario/mergo v0.3.16",
    ]


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
