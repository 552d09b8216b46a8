"""diagnostics/rules.py: credentials redacted in what the archive holds, and member names that stay inside the archive."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.diagnostics import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import MARKER


JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"


def test_redact_masks_credential_env_and_tokens_everywhere():
    env = [{"name": "DB_PASSWORD", "value": "hunter2"}, {"name": "NODENAME", "value": "node-1"}]
    obj = {"spec": {"template": {"spec": {"containers": [{"name": "c", "env": env}]}}},
           "status": {"message": "token %s rejected" % JWT}}
    out = rules.redact(obj)
    env = out["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "DB_PASSWORD", "value": MARKER}, {"name": "NODENAME", "value": "node-1"}]
    assert out["status"]["message"] == "token %s rejected" % MARKER
    assert obj["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "hunter2"  # a copy


def test_member_names_stay_inside_the_archive():
    assert rules.member_name("namespaces", "../etc", "logs", "a/b", "c.log") == "namespaces/_etc/logs/a_b/c.log"
