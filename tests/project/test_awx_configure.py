"""playbooks/awx/configure.yml (AWX job templates as code), without an AWX: with ``awx_render_to`` the play writes
every object it would create and stops before contacting the controller. The surveys must ask for the roles'
own public variables, with answers the roles' argument specs accept; the credential type must inject a bearer
token as the K8S_AUTH_* variables."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PLAYBOOK = ROOT / "playbooks" / "awx" / "configure.yml"
COLLECTION_PLAYBOOKS = sorted("playbooks/" + p.name for p in (ROOT / "playbooks").glob("*.yml"))


def ansible_playbook(*args, **env_overrides):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0", PATH=str(BIN) + os.pathsep + os.environ.get("PATH", ""))
    env.update(env_overrides)
    return subprocess.run([str(BIN / "ansible-playbook"), *map(str, args)], cwd=str(ROOT), env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def role_spec(role, entry):
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    return specs[entry]["options"]


class PlaybookLoader(yaml.SafeLoader):
    """SafeLoader that reads Ansible's ``!unsafe`` tag as the plain string."""


PlaybookLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def configured_templates():
    play = yaml.load(PLAYBOOK.read_text(), Loader=PlaybookLoader)[0]  # noqa: S506 - a SafeLoader subclass
    return play["vars"]["awx_job_templates"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("awx") / "objects.json"
    proc = ansible_playbook(PLAYBOOK, "-e", "awx_render_to=%s" % out)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def test_one_job_template_per_playbook(rendered):
    playbooks = [jt["playbook"] for jt in rendered["job_templates"]]
    assert sorted(playbooks) == COLLECTION_PLAYBOOKS
    names = [jt["name"] for jt in rendered["job_templates"]]
    assert len(set(names)) == len(names)


def test_survey_variables_are_the_roles_public_variables(rendered):
    by_playbook = {t["playbook"]: t for t in configured_templates()}
    for jt in rendered["job_templates"]:
        conf = by_playbook[jt["playbook"]]
        spec = role_spec(conf["role"], conf["entry"])
        questions = jt["survey_spec"]["spec"]
        assert questions, jt["name"]
        assert jt["survey_spec"]["name"] and jt["survey_spec"]["description"]
        for q in questions:
            var = q["variable"]
            assert var in spec, "%s: %s is not an option" % (jt["name"], var)
            option = spec[var]
            assert q["required"] is False
            choices = [str(c) for c in option.get("choices", []) if str(c) != ""]
            if option.get("type") == "list" and choices:
                assert (q["type"], q["choices"]) == ("multiselect", choices), var
            elif choices:
                assert (q["type"], q["choices"]) == ("multiplechoice", choices), var
            elif option.get("type") == "bool":
                assert (q["type"], q["choices"]) == ("multiplechoice", ["true", "false"]), var
                assert q["default"] == str(option.get("default", False)).lower()
            elif option.get("type") == "int":
                assert q["type"] == "integer", var
            elif option.get("no_log"):
                assert q["type"] == "password", var
            else:
                assert q["type"] == "text", var
    # every playbook runs a role: its argument spec is the one source of the survey
    assert all("role" in t and "options" not in t for t in configured_templates())


def sample_answer(q):
    """What AWX would pass for an answered question: a string, a number, or a list (multiselect)."""
    if q["type"] == "multiselect":
        return q["choices"][:2]
    if q["type"] == "multiplechoice":
        return q["default"] if q["default"] else q["choices"][-1]
    if q["type"] == "integer":
        return q["default"] if q["default"] != "" else 443
    return q["default"] or "answer"


def test_survey_answers_pass_the_argument_specs(rendered, tmp_path):
    """AWX passes survey answers as extra vars; the role's argument spec (validate_argument_spec, as on role
    entry) must accept them."""
    by_playbook = {t["playbook"]: t for t in configured_templates()}
    tasks = []
    answers = {}
    for jt in rendered["job_templates"]:
        conf = by_playbook[jt["playbook"]]
        spec = role_spec(conf["role"], conf["entry"])
        these = {q["variable"]: sample_answer(q) for q in jt["survey_spec"]["spec"]}
        answers.update(these)
        tasks.append({"name": jt["name"], "ansible.builtin.validate_argument_spec": {
            "argument_spec": spec, "provided_arguments": {var: "{{ %s }}" % var for var in these}}})
    play = [{"name": "Survey answers", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    proc = ansible_playbook(tmp_path / "play.yml", "-i", "localhost,", "-c", "local",
                            "-e", "@%s" % (tmp_path / "answers.json"))
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "ok=%d" % len(tasks) in proc.stdout


def test_credential_type_injects_the_bearer_token(rendered):
    ct = rendered["credential_type"]
    assert ct["kind"] == "cloud"
    fields = {f["id"]: f for f in ct["inputs"]["fields"]}
    assert set(fields) == {"host", "api_key", "ssl_ca_cert"}
    assert fields["api_key"].get("secret") is True
    assert fields["ssl_ca_cert"].get("multiline") is True
    assert set(ct["inputs"]["required"]) == {"host", "api_key", "ssl_ca_cert"}
    # AWX renders these templates when it injects the credential: they must reach it unrendered
    assert ct["injectors"]["env"]["K8S_AUTH_HOST"] == "{{ host }}"
    assert ct["injectors"]["env"]["K8S_AUTH_API_KEY"] == "{{ api_key }}"
    assert ct["injectors"]["env"]["K8S_AUTH_SSL_CA_CERT"] == "{{ tower.filename.ca_cert }}"
    assert ct["injectors"]["file"] == {"template.ca_cert": "{{ ssl_ca_cert }}"}


def test_no_secret_in_the_rendered_objects(tmp_path):
    out = tmp_path / "objects.json"
    proc = ansible_playbook(PLAYBOOK, "-e", "awx_render_to=%s" % out, "-e", "awx_kubernetes_host=https://k8s:6443",
                            "-e", "awx_kubernetes_api_key=s3cr3t-token-value")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "s3cr3t-token-value" not in out.read_text()
    assert "s3cr3t-token-value" not in proc.stdout
    assert json.loads(out.read_text())["credential"] == "Kubernetes - calico_ops"


def test_a_survey_variable_that_is_not_an_option_is_refused(tmp_path):
    templates = [{"name": "kube-proxy", "playbook": "playbooks/kube_proxy.yml", "description": "x",
                  "role": "kube_proxy", "entry": "main", "survey": ["kube_proxy_state", "kube_proxy_sate"]}]
    (tmp_path / "vars.json").write_text(json.dumps({"awx_job_templates": templates}))
    proc = ansible_playbook(PLAYBOOK, "-e", "@%s" % (tmp_path / "vars.json"),
                            "-e", "awx_render_to=%s" % (tmp_path / "objects.json"))
    assert proc.returncode != 0
    assert "kube_proxy_sate is not a str, int, bool or choices option of kube_proxy" in proc.stdout
    assert not (tmp_path / "objects.json").exists()


def test_the_fleet_workflow_is_canary_approval_rest_with_a_failure_edge_to_diagnostics(rendered):
    wf = rendered["workflow"]
    nodes = {n["identifier"]: n for n in wf["nodes"]}
    assert set(nodes) == {"canary", "approval", "rest", "diagnostics"}
    templates = {jt["name"] for jt in rendered["job_templates"]}
    for ident in ("canary", "rest", "diagnostics"):
        assert nodes[ident]["unified_job_template"]["type"] == "job_template"
        assert nodes[ident]["unified_job_template"]["name"] in templates, nodes[ident]
    assert nodes["canary"]["extra_data"] == {"fleet_rollout_scope": "canary"}
    assert nodes["rest"]["extra_data"] == {"fleet_rollout_scope": "rest"}
    approval = nodes["approval"]["unified_job_template"]
    assert approval["type"] == "workflow_approval" and approval["timeout"] == 3600
    assert nodes["canary"]["related"]["success_nodes"] == [{"identifier": "approval"}]
    assert nodes["approval"]["related"]["success_nodes"] == [{"identifier": "rest"}]
    assert nodes["canary"]["related"]["failure_nodes"] == [{"identifier": "diagnostics"}]
    assert nodes["rest"]["related"]["failure_nodes"] == [{"identifier": "diagnostics"}]
    assert nodes["diagnostics"]["unified_job_template"]["name"].endswith("Collect Calico diagnostics")
    # the scope each node passes is a question of the fleet template's survey (AWX drops extra data otherwise)
    fleet = next(jt for jt in rendered["job_templates"] if jt["playbook"] == "playbooks/fleet_rollout.yml")
    assert "fleet_rollout_scope" in [q["variable"] for q in fleet["survey_spec"]["spec"]]
    assert wf["inventory"] == rendered["fleet_inventory"]["name"]
    assert rendered["fleet_inventory"]["source_path"] == "inventories/fleet"
    assert fleet["inventory"] == rendered["fleet_inventory"]["name"]
    assert {jt["inventory"] for jt in rendered["job_templates"] if jt is not fleet} == {rendered["inventory"]["name"]}
