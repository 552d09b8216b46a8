"""k8s/redact.py: Secret data, sensitive kinds and keys, and known secret values in any text, in every form (the
module base's use of it: test_module.py)."""

import json

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import redact
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import (
    MARKER, Redactor, forms, is_secret, module_secrets, redact_object, redact_secret_parts, redact_text)
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.secrets import b64, secret


PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\nqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ\n" \
      "-----END PRIVATE KEY-----\n"


def test_a_secret_keeps_its_keys_and_loses_its_values():
    obj = secret()
    out = redact_object(obj)
    assert out["data"] == {"k": MARKER, "empty": MARKER}
    assert out["stringData"] == {"p": MARKER}
    assert out["metadata"]["annotations"] == {redact.LAST_APPLIED: MARKER, "keep": "me"}
    assert out["metadata"]["name"] == "s" and out["type"] == "Opaque"
    assert obj["data"]["k"] == b64("hunter2-hunter2")  # a copy: the input is untouched


def test_secrets_are_found_anywhere_in_a_result_and_without_their_kind():
    item = secret()
    del item["kind"], item["apiVersion"]  # a LIST's items carry no kind
    result = {"results": [{"before": secret(), "after": {}}], "diff": [{"before": {}, "after": secret()}],
              "items": [item], "object": {"kind": "SecretList", "items": [item]}}
    text = json.dumps(redact_object(result))
    assert "hunter2" not in text and b64("hunter2-hunter2") not in text and "plain-password-1" not in text
    assert text.count(MARKER) >= 10


def test_what_is_not_a_secret_is_left_alone():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    assert redact_object(cm) == cm
    no_type = {"metadata": {"name": "c"}, "data": {"k": "v"}}  # a ConfigMap item of a LIST: no type
    assert redact_object(no_type) == no_type
    other = {"kind": "Installation", "type": "x", "metadata": {}, "data": {"k": "v"}}
    assert redact_object(other) == other
    assert not is_secret(cm) and is_secret(secret()) and not is_secret("Secret")


def test_a_licence_keeps_its_shape_and_loses_token_and_certificate():
    lic = {"apiVersion": "projectcalico.org/v3", "kind": "LicenseKey", "metadata": {"name": "default"},
           "spec": {"token": "tok", "certificate": PEM, "other": 1}}
    assert redact_object(lic)["spec"] == {"token": MARKER, "certificate": MARKER, "other": 1}


def test_keys_the_caller_marks_sensitive_anywhere_and_in_any_case():
    obj = {"a": {"Password": "p", "b": [{"apiKey": "k", "c": "v"}]}, "password": None}
    out = redact_object(obj, keys=("password", "APIKEY"))
    assert out == {"a": {"Password": MARKER, "b": [{"apiKey": MARKER, "c": "v"}]}, "password": None}


def test_secret_parts_without_a_kind():
    patch = {"data": {"k": b64("x")}, "metadata": {"labels": {"a": "b"}}}
    assert redact_secret_parts(patch) == {"data": {"k": MARKER}, "metadata": {"labels": {"a": "b"}}}
    assert redact_secret_parts(None) is None


@pytest.mark.parametrize("shown", [
    PEM, PEM.strip(), b64(PEM), b64(PEM.strip()), json.dumps(PEM)[1:-1], "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw",
    json.dumps({"key": PEM}), "token-value-1234"])
def test_text_loses_every_form_of_a_known_value(shown):
    text = "error: %s (while talking to the API)" % shown
    out = redact_text(text, [PEM, "token-value-1234"])
    assert MARKER in out
    assert not any(f in out for f in forms(PEM) | forms("token-value-1234"))
    assert out.startswith("error: ") and out.endswith("(while talking to the API)")


def test_text_without_values_and_short_armor_lines():
    assert redact_text("-----BEGIN PRIVATE KEY----- is not a secret", [PEM]) == \
        "-----BEGIN PRIVATE KEY----- is not a secret"
    assert redact_text("abc", []) == "abc"
    assert redact_text(None, [PEM]) is None
    assert forms("   ") == set()


def test_module_secrets_are_its_no_log_options_at_any_depth_and_the_bearer_token():
    spec = {"key": {"type": "str", "no_log": True}, "name": {"type": "str"},
            "data": {"type": "dict", "no_log": True},
            "nested": {"type": "list", "elements": "dict", "options": {"pw": {"type": "str", "no_log": True}}}}
    params = {"key": "k-value", "name": "n", "data": {"s": {"k": "deep"}}, "nested": [{"pw": "p1"}, {"pw": None}]}
    got = module_secrets(spec, params, env={"K8S_AUTH_API_KEY": "bearer-token", "OTHER": "x"})
    assert sorted(got) == ["bearer-token", "deep", "k-value", "p1"]


def test_the_redactor_redacts_objects_and_every_string():
    r = Redactor(["etcd-key-value-123"], keys=("password",))
    result = {"msg": "failed with etcd-key-value-123", "documents": [secret()], "password": "p",
              "list": ["x %s" % b64("etcd-key-value-123")], "etcd-key-value-123": 1}
    out = json.dumps(r.value(result))
    assert "etcd-key-value-123" not in out and b64("etcd-key-value-123") not in out
    assert "hunter2" not in out and '"password": "%s"' % MARKER in out


def test_an_api_message_quoting_a_refused_secret_is_redacted():
    """A 422 of a merge patch on a Secret quotes the whole object, its data included (seen on kube-apiserver 1.33)."""
    obj = {"apiVersion": "v1", "data": {"token": "not base64 planted-value-0123456789", "other": b64("kept-secret")},
           "kind": "Secret", "metadata": {"name": "patched"}, "type": "Opaque"}
    message = ('"" is invalid: patch: Invalid value: %s: illegal base64 data at input byte 3'
               % json.dumps(json.dumps(obj, separators=(",", ":"))))
    out = redact.redact_api_message(message)
    assert "planted-value" not in out and b64("kept-secret") not in out
    assert out.endswith(": illegal base64 data at input byte 3") and MARKER in out and "patched" in out
    # a patch without its kind, on a Secret's path
    part = 'Invalid value: %s: x' % json.dumps(json.dumps({"data": {"k": "planted-value-0123456789"}}))
    assert "planted-value" not in redact.redact_api_message(part, secret=True)
    assert "planted-value" in redact.redact_api_message(part, secret=False)  # not a Secret: nothing to redact
    # a quoted scalar: whole on a Secret's path, kept elsewhere
    scalar = 'metadata.name: Invalid value: "Pull_Secret": a lowercase RFC 1123 subdomain'
    assert redact.redact_api_message(scalar) == scalar
    assert redact.redact_api_message(scalar, secret=True) == \
        'metadata.name: Invalid value: "%s": a lowercase RFC 1123 subdomain' % MARKER
    assert redact.redact_api_message(None) is None


def test_the_causes_of_an_api_status_are_redacted_too():
    quoted = json.dumps(json.dumps({"kind": "Secret", "metadata": {}, "data": {"k": "planted-value-y"}}))
    status = {"message": "Invalid value: %s" % quoted, "details": {"causes": [{"message": "Invalid value: %s" % quoted}]}}
    assert "planted-value-y" not in json.dumps(redact.redact_api_message(status))


def _reference_redact(obj, keys=()):
    """The earlier implementation (deep copy, then mask in place): the one-pass copy must give the same."""
    import copy as _copy
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import redact as r
    lowered = frozenset(k.lower() for k in keys)

    def walk(o):
        if isinstance(o, list):
            return [walk(i) for i in o]
        if not isinstance(o, dict):
            return o
        if r.is_secret(o):
            for field in r.SECRET_FIELDS:
                if field in o:
                    o[field] = r._mask_map(o[field])
            annotations = (o.get("metadata") or {}).get("annotations")
            if isinstance(annotations, dict) and r.LAST_APPLIED in annotations:
                annotations[r.LAST_APPLIED] = r.MARKER
        if isinstance(o.get("kind"), str) and o["kind"] in r.SENSITIVE_PATHS:
            r._redact_paths(o, r.SENSITIVE_PATHS[o["kind"]])
        for key in list(o):
            if isinstance(key, str) and key.lower() in lowered and o[key] is not None:
                o[key] = r.MARKER
            else:
                o[key] = walk(o[key])
        return o
    return walk(_copy.deepcopy(obj))


def test_one_pass_copy_redacts_as_the_deep_copy_did_and_leaves_the_input_alone():
    import copy as _copy
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import Redactor, redact_object
    secret = {"kind": "Secret", "type": "Opaque", "metadata": {"name": "s", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": '{"data":{"k":"c2VjcmV0"}}', "other": "kept"}},
        "data": {"k": "c2VjcmV0"}, "stringData": {"p": "plain"}}
    listed = {"type": "kubernetes.io/dockerconfigjson", "metadata": {"name": "pull"},
              "data": {".dockerconfigjson": "e30="}}  # a LIST item: no kind
    licence = {"kind": "LicenseKey", "metadata": {"name": "default"}, "spec": {"token": "tok", "certificate": "pem"}}
    configmap = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    result = {"changed": True, "objects": [secret, listed, licence, configmap], "nested": {"deep": [{"items": [
        listed]}], "password": "hunter2", "Token": None}, "pair": ["a", {"apiKey": "xyz"}], "n": 3, "f": 1.5,
        "none": None, "flag": False}
    keys = ("password", "token", "apikey")
    before = _copy.deepcopy(result)
    assert redact_object(result, keys) == _reference_redact(result, keys)
    assert redact_object(result) == _reference_redact(result)
    assert result == before  # the input is not touched
    out = redact_object(result, keys)
    assert out["objects"][0]["data"] == {"k": "<redacted>"} and out["objects"][0]["stringData"] == {"p": "<redacted>"}
    assert out["objects"][0]["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": "<redacted>", "other": "kept"}
    assert out["objects"][1]["data"] == {".dockerconfigjson": "<redacted>"}
    assert out["objects"][2]["spec"] == {"token": "<redacted>", "certificate": "<redacted>"}
    assert out["objects"][3]["data"] == {"k": "v"}
    assert out["nested"]["password"] == "<redacted>" and out["nested"]["Token"] is None
    assert out["pair"][1] == {"apiKey": "<redacted>"}
    out["objects"][3]["data"]["k"] = "changed"
    assert result["objects"][3]["data"]["k"] == "v"  # a copy, not a view
    # a run given no secret value: the strings are not walked, the objects still are
    assert Redactor().value(result) == redact_object(result)
    given = Redactor(values=["hunter2-long-secret"])
    assert given.value({"msg": "token hunter2-long-secret here"}) == {"msg": "token <redacted> here"}
    given.add("another-secret-value")
    assert given.text("x another-secret-value y") == "x <redacted> y"
