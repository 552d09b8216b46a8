"""k8s/auth_settings.py: a fleet host's K8S_AUTH_* settings (calico_k8s_auth) become the action group's module
options - read by the modules exactly as the same values were read from the environment - and a setting the
group's modules do not all take is refused, naming its key and never its value."""

import pytest

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.helm_args_common import HELM_AUTH_ARG_SPEC

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import auth_settings as auth
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import transport
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import auth_argument_spec

TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.dG9rZW4"
FLEET = {"K8S_AUTH_HOST": "https://api.example:6443", "K8S_AUTH_API_KEY": TOKEN,
         "K8S_AUTH_SSL_CA_CERT": "/vault/ca.crt", "K8S_AUTH_VERIFY_SSL": "true"}


def test_a_token_becomes_no_log_options_every_module_of_the_group_takes():
    options = auth.module_options(FLEET)
    assert options == {"host": "https://api.example:6443", "api_key": TOKEN, "ca_cert": "/vault/ca.crt",
                       "validate_certs": True}
    for spec in (auth_argument_spec(), AUTH_ARG_SPEC, HELM_AUTH_ARG_SPEC):  # this collection's, k8s's, helm's
        assert set(auth.OPTIONS.values()) <= set(spec)
        assert spec["api_key"].get("no_log") is True


@pytest.mark.parametrize("settings", [
    FLEET,
    {"K8S_AUTH_KUBECONFIG": "/fleet/a.kubeconfig", "K8S_AUTH_CONTEXT": "admin@a"},
    {"K8S_AUTH_HOST": "https://a:6443", "K8S_AUTH_API_KEY": TOKEN, "K8S_AUTH_CA_CERT": "/ca",
     "K8S_AUTH_VALIDATE_CERTS": "no"},
    {"K8S_AUTH_HOST": "https://a:6443", "K8S_AUTH_API_KEY": TOKEN, "K8S_AUTH_VERIFY_SSL": "False"},
])
def test_the_modules_read_the_options_as_they_read_the_environment(settings):
    """What the lean transport (kubernetes.core's rules) makes of the settings: as module options now, as the
    play's environment before - the same server, token, CA and verification."""
    params = dict.fromkeys(auth_argument_spec())
    params.update(auth.module_options(settings))
    assert transport.auth_options(params, environ={}) == transport.auth_options(dict.fromkeys(params), settings)


def test_the_role_s_kubeconfig_and_context_win_and_empty_settings_are_left_out():
    settings = {"K8S_AUTH_KUBECONFIG": "/fleet/a.kubeconfig", "K8S_AUTH_CONTEXT": "a", "K8S_AUTH_HOST": " "}
    assert auth.module_options(settings) == {"kubeconfig": "/fleet/a.kubeconfig", "context": "a"}
    assert auth.module_options(settings, kubeconfig="/role.kubeconfig", context="b") == {
        "kubeconfig": "/role.kubeconfig", "context": "b"}
    assert auth.module_options(None, kubeconfig="", context="") == {}
    assert auth.module_options({}, kubeconfig="/k") == {"kubeconfig": "/k"}
    assert auth.module_options({"K8S_AUTH_VERIFY_SSL": False})["validate_certs"] is False
    assert auth.module_options({"K8S_AUTH_VERIFY_SSL": "0"})["validate_certs"] is False
    assert auth.module_options({"K8S_AUTH_VERIFY_SSL": "yes"})["validate_certs"] is True


def test_a_value_that_is_not_text_becomes_text():
    class Vaulted(object):  # an older ansible-core's vaulted value: str() decrypts it
        def __str__(self):
            return TOKEN
    assert auth.module_options({"K8S_AUTH_API_KEY": Vaulted()}) == {"api_key": TOKEN}


def test_other_settings_are_refused_by_key_never_by_value():
    bad = {"K8S_AUTH_HOST": "https://a", "K8S_AUTH_PASSWORD": "hunter2-secret", "HTTPS_PROXY": "http://p:3128"}
    problems = auth.problems(bad)
    assert len(problems) == 1 and problems[0].startswith("calico_k8s_auth: HTTPS_PROXY, K8S_AUTH_PASSWORD not taken")
    assert "hunter2" not in problems[0] and "http://p" not in problems[0] and "K8S_AUTH_KUBECONFIG" in problems[0]
    with pytest.raises(ValueError) as err:
        auth.module_options(bad)
    assert "hunter2" not in str(err.value) and "K8S_AUTH_PASSWORD" in str(err.value)
    assert auth.problems({"K8S_AUTH_SSL_CA_CERT": "/a", "K8S_AUTH_CA_CERT": "/b"}, name="h: calico_k8s_auth") == [
        "h: calico_k8s_auth: K8S_AUTH_CA_CERT and K8S_AUTH_SSL_CA_CERT say the same (module option ca_cert): give one"]
    assert auth.problems({"K8S_AUTH_SSL_CA_CERT": "/a", "K8S_AUTH_CA_CERT": ""}) == []
    assert auth.problems("https://a") == [
        "calico_k8s_auth must be a dictionary of K8S_AUTH_* settings (%s), not a str" % ", ".join(sorted(auth.OPTIONS))]
    assert auth.problems(None) == [] and auth.problems("") == []
