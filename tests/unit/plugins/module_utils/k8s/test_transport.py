"""k8s/transport.py: which auth shapes it reads (and which it leaves to kubernetes.core's client), what it sends,
and how an error status and a dropped connection come back. No network: the connection class is a fake."""

import base64
import http.client
import os
import ssl

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import transport as tr
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import ClientError


CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()


def kubeconfig(tmp_path, cluster=None, user=None, current="ctx", name="config"):
    import yaml
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": current,
           "clusters": [{"name": "c", "cluster": dict({"server": "https://127.0.0.1:6443/"}, **(cluster or {}))}],
           "users": [{"name": "u", "user": dict(user if user is not None else {"token": "t0k"})}],
           "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}},
                        {"name": "other", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_a_kubeconfig_with_a_token_and_ca_data_is_read_here(tmp_path):
    path = kubeconfig(tmp_path, cluster={"certificate-authority-data": CA})
    ep = tr.endpoint({"kubeconfig": path}, environ={})
    assert ep.server == "https://127.0.0.1:6443" and ep.verify is True
    assert ep.ca == ("data", base64.b64decode(CA)) and ep.bearer() == "t0k" and ep.cert is None


def test_relative_files_are_read_from_the_kubeconfigs_directory(tmp_path):
    (tmp_path / "tok").write_text("from-file\n")
    path = kubeconfig(tmp_path, cluster={"certificate-authority": "pki/ca.crt"},
                      user={"client-certificate": "pki/a.crt", "client-key": "/abs/a.key", "tokenFile": "tok"})
    ep = tr.endpoint({}, environ={"K8S_AUTH_KUBECONFIG": path})
    assert ep.ca == ("file", str(tmp_path / "pki" / "ca.crt"))
    assert ep.cert == ("file", str(tmp_path / "pki" / "a.crt")) and ep.key == ("file", "/abs/a.key")
    assert ep.bearer() == "from-file"


def test_options_win_over_the_kubeconfig_as_in_kubernetes_core(tmp_path):
    path = kubeconfig(tmp_path, cluster={"insecure-skip-tls-verify": True})
    ep = tr.endpoint({"kubeconfig": path, "host": "https://10.0.0.1:443", "api_key": "key",
                      "validate_certs": True, "ca_cert": "/ca.pem"}, environ={})
    assert (ep.server, ep.bearer(), ep.verify, ep.ca) == ("https://10.0.0.1:443", "key", True, ("file", "/ca.pem"))


def test_the_context_option_and_env_choose_the_context(tmp_path):
    path = kubeconfig(tmp_path, current="missing")
    assert tr.endpoint({"kubeconfig": path}, environ={}) is None  # no such context: kubernetes.core says so
    assert tr.endpoint({"kubeconfig": path, "context": "other"}, environ={}).bearer() == "t0k"
    assert tr.endpoint({"kubeconfig": path}, environ={"K8S_AUTH_CONTEXT": "other"}).bearer() == "t0k"


def test_the_switch_hands_every_shape_to_kubernetes_core(tmp_path):
    path = kubeconfig(tmp_path)
    assert tr.endpoint({"kubeconfig": path}, environ={}) is not None  # unset: lean
    assert tr.endpoint({"kubeconfig": path}, environ={"CALICO_OPS_K8S_CLIENT": ""}) is not None
    assert tr.endpoint({"kubeconfig": path}, environ={"CALICO_OPS_K8S_CLIENT": "lean"}) is not None
    assert tr.endpoint({"kubeconfig": path}, environ={"CALICO_OPS_K8S_CLIENT": "kubernetes.core"}) is None
    assert tr.endpoint({"host": "https://h:6443", "api_key": "k"},
                       environ={"CALICO_OPS_K8S_CLIENT": "kubernetes.core"}) is None


@pytest.mark.parametrize("value", ["kubernetes", "Lean", "requests"])
def test_a_bad_switch_value_names_the_variable_and_the_choices(tmp_path, value):
    with pytest.raises(ValueError) as err:
        tr.endpoint({"kubeconfig": kubeconfig(tmp_path)}, environ={"CALICO_OPS_K8S_CLIENT": value})
    assert str(err.value) == ("CALICO_OPS_K8S_CLIENT is %r: choose one of lean, kubernetes.core (unset means lean)"
                              % value)


def test_host_with_api_key_skips_the_kubeconfig():
    ep = tr.endpoint({"host": "https://h:6443", "api_key": "k", "validate_certs": False}, environ={})
    assert (ep.server, ep.bearer(), ep.verify) == ("https://h:6443", "k", False)
    env = {"K8S_AUTH_HOST": "https://h:6443", "K8S_AUTH_API_KEY": "k", "K8S_AUTH_VERIFY_SSL": "no"}
    ep = tr.endpoint({}, environ=env)
    assert (ep.server, ep.bearer(), ep.verify) == ("https://h:6443", "k", False)


@pytest.mark.parametrize("user,cluster", [
    ({"exec": {"command": "aws"}}, {}),
    ({"auth-provider": {"name": "oidc"}}, {}),
    ({"username": "a", "password": "b"}, {}),
    ({"as": "someone"}, {}),
    ({"token": "t"}, {"proxy-url": "http://proxy:3128"}),
    ({"token": "t"}, {"tls-server-name": "kubernetes"}),
    ({"client-certificate": "a.crt"}, {}),  # half a client certificate
])
def test_other_shapes_are_left_to_kubernetes_core(tmp_path, user, cluster):
    assert tr.endpoint({"kubeconfig": kubeconfig(tmp_path, cluster=cluster, user=user)}, environ={}) is None


@pytest.mark.parametrize("params,environ", [
    ({"impersonate_user": "bob"}, {}),
    ({}, {"K8S_AUTH_IMPERSONATE_GROUPS": "g"}),
    ({"proxy": "http://p:3128"}, {}),
    ({"username": "u", "password": "p"}, {}),
    ({"persist_config": True}, {}),
    ({}, {"K8S_AUTH_PROXY_HEADERS_USER_AGENT": "x"}),
])
def test_options_only_kubernetes_core_implements_hand_over(tmp_path, params, environ):
    assert tr.endpoint(dict(params, kubeconfig=kubeconfig(tmp_path)), environ=environ) is None


def test_in_cluster_and_merged_kubeconfigs_hand_over(tmp_path):
    assert tr.endpoint({}, environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) is None
    both = os.pathsep.join([kubeconfig(tmp_path), kubeconfig(tmp_path, name="b")])
    assert tr.endpoint({}, environ={"KUBECONFIG": both}) is None
    assert tr.endpoint({"kubeconfig": str(tmp_path / "absent")}, environ={}) is None
    (tmp_path / "bad").write_text(": not yaml [")
    assert tr.endpoint({"kubeconfig": str(tmp_path / "bad")}, environ={}) is None


def test_a_kubeconfig_given_as_a_dict(tmp_path):
    doc = {"current-context": "x", "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
           "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:8080"}}],
           "users": [{"name": "u", "user": {}}]}
    ep = tr.endpoint({"kubeconfig": doc}, environ={})
    assert ep.server == "http://127.0.0.1:8080" and ep.bearer() is None


class FakeConnection(object):
    """http.client's connection, recording what is sent; ``script`` is a list of responses or exceptions."""

    made = []

    def __init__(self, host, port, context=None, timeout=None):
        self.host, self.port, self.timeout = host, port, timeout
        self.sent = []
        self.sock = None
        self.closed = False
        FakeConnection.made.append(self)

    def request(self, method, url, body=None, headers=None):
        step = FakeConnection.script.pop(0)
        self.sent.append((method, url, body, dict(headers)))
        if isinstance(step, Exception):
            raise step
        self._next = step

    def getresponse(self):
        return self._next

    def close(self):
        self.closed = True


class FakeResponse(object):
    def __init__(self, status, body, reason="OK"):
        self.status, self.reason, self._body = status, reason, body

    def read(self):
        return self._body


@pytest.fixture
def fake_http(monkeypatch):
    FakeConnection.made = []
    FakeConnection.script = []
    monkeypatch.setattr(tr.http_client, "HTTPConnection", FakeConnection)
    return FakeConnection


def test_a_request_carries_the_token_the_body_and_the_query(fake_http):
    fake_http.script = [FakeResponse(200, b'{"kind": "ConfigMap"}')]
    t = tr.HttpTransport(tr.Endpoint("http://127.0.0.1:8080/prefix/", token="s3cret"))
    out = Client(t).merge_patch("v1", "configmaps", "x", {"data": {"a": "b"}}, namespace="ns")
    assert out == {"kind": "ConfigMap"}
    method, url, body, headers = fake_http.made[0].sent[0]
    assert (method, url) == ("PATCH", "/prefix/api/v1/namespaces/ns/configmaps/x?fieldManager=calico-ops")
    assert body == b'{"data": {"a": "b"}}'
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["Content-Type"] == "application/merge-patch+json" and headers["User-Agent"] == tr.USER_AGENT


def test_an_error_status_is_the_apis_message_on_one_line(fake_http):
    fake_http.script = [FakeResponse(404, b'{"kind": "Status", "message": "configmaps \\"x\\" not found"}',
                                     "Not Found"),
                        FakeResponse(403, b'{"kind": "Status", "message": "forbidden: no"}', "Forbidden")]
    client = Client(tr.HttpTransport(tr.Endpoint("http://127.0.0.1:8080", token="s3cret")))
    assert client.get("v1", "configmaps", "x", namespace="ns") is None
    with pytest.raises(ClientError) as err:
        client.get("v1", "configmaps", "x", namespace="ns")
    assert err.value.status == 403 and "forbidden: no" in str(err.value) and "s3cret" not in str(err.value)


def test_a_keep_alive_connection_the_server_closed_is_replaced_once(fake_http):
    fake_http.script = [FakeResponse(200, b"{}"), http.client.RemoteDisconnected("closed"), FakeResponse(200, b"{}")]
    client = Client(tr.HttpTransport(tr.Endpoint("http://127.0.0.1:8080")))
    client.get("v1", "namespaces", "a")
    client.get("v1", "namespaces", "b")  # the reused connection fails: a new one sends it again
    assert len(fake_http.made) == 2 and fake_http.made[0].closed
    assert client.requests["read"] == 2


def test_a_create_is_never_sent_twice_and_a_refused_connection_names_the_server(fake_http):
    fake_http.script = [FakeResponse(200, b"{}"), http.client.RemoteDisconnected("closed")]
    client = Client(tr.HttpTransport(tr.Endpoint("http://127.0.0.1:8080")))
    client.get("v1", "namespaces", "a")
    with pytest.raises(ClientError) as err:
        client.create("v1", "configmaps", {"metadata": {"name": "x"}}, namespace="ns")
    assert len(fake_http.made) == 1 and err.value.status == 0
    fake_http.script = [ConnectionRefusedError(111, "Connection refused")]
    with pytest.raises(ClientError) as err:
        client.get("v1", "namespaces", "a")
    assert "the API server at http://127.0.0.1:8080 was not reached (connection refused)" in str(err.value)


def test_client_certificate_data_is_loaded_from_private_files_removed_at_once(monkeypatch):
    seen = {}

    class Ctx(object):
        def load_cert_chain(self, cert, key):
            seen["modes"] = [os.stat(p).st_mode & 0o777 for p in (cert, key)]
            seen["data"] = [open(p, "rb").read() for p in (cert, key)]
            seen["paths"] = (cert, key)

    tr._load_cert_chain(Ctx(), ("data", b"CERT"), ("data", b"KEY"))
    assert seen["modes"] == [0o600, 0o600] and seen["data"] == [b"CERT", b"KEY"]
    assert not any(os.path.exists(p) for p in seen["paths"])
    assert not os.path.exists(os.path.dirname(seen["paths"][0]))


def test_nothing_answering_the_first_request_is_the_modules_failure_later_the_objects(fake_http):
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import FirstContactFailed
    fake_http.script = [ConnectionRefusedError(111, "Connection refused"), FakeResponse(200, b"{}"),
                        ConnectionRefusedError(111, "Connection refused")]
    client = Client(tr.HttpTransport(tr.Endpoint("http://127.0.0.1:8080")),
                    first_contact_fails_module=True)  # what K8sModule.client() asks for
    with pytest.raises(FirstContactFailed) as first:
        client.get("v1", "namespaces", "a")
    assert isinstance(first.value.cause, tr.Unreachable)  # the module names its subject (K8sModule.run)
    client.get("v1", "namespaces", "a")
    with pytest.raises(ClientError) as later:  # once the server answered, a failure names the request's object
        client.get("v1", "namespaces", "b")
    assert later.value.status == 0 and "namespaces b" in str(later.value)


def _self_signed_ca_pem():
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, u"unit-test-ca")])
    now = datetime.datetime(2026, 1, 1)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)


@pytest.mark.parametrize("kind", ["data", "file"])
def test_the_kubeconfigs_ca_is_the_only_one_trusted(tmp_path, kind):
    pem = _self_signed_ca_pem()
    ca = tmp_path / "ca.crt"
    ca.write_bytes(pem)
    ctx = tr._ssl_context(tr.Endpoint("https://127.0.0.1:6443", ca=(kind, pem if kind == "data" else str(ca))))
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", "unit-test-ca"),),)]
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    # verified as kubectl and kubernetes.core's client verify, on every Python: not Python 3.13's stricter default
    # (VERIFY_X509_STRICT refuses a cluster certificate without an Authority Key Identifier)
    assert not ctx.verify_flags & getattr(ssl, "VERIFY_X509_STRICT", 0)


def test_without_a_ca_the_systems_store_and_with_skip_verify_none(monkeypatch):
    loaded = []
    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", lambda self, *a: loaded.append(a))
    ctx = tr._ssl_context(tr.Endpoint("https://127.0.0.1:6443"))
    assert len(loaded) == 1 and ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    ctx = tr._ssl_context(tr.Endpoint("https://127.0.0.1:6443", verify=False))
    assert len(loaded) == 1 and ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname
