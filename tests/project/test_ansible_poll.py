"""The tests' ansible-playbook processes poll for finished tasks every 0.01 s, not ansible-core's 0.001 s
(tests/ansible.cfg says what the default costs): the setting is where each runner of the tests reads it, and
ansible-core takes it from there."""

import configparser
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CFG = ROOT / "tests" / "ansible.cfg"


def _interval():
    parser = configparser.ConfigParser()
    parser.read(CFG)
    return float(parser["defaults"]["internal_poll_interval"])


def test_the_tests_poll_less_often_than_the_default_and_see_a_result_within_20_ms():
    assert 0.001 < _interval() <= 0.02


def test_every_test_process_is_pointed_at_the_file():
    # tests/conftest.py sets it for pytest and everything it starts (the harness's ansible-playbook, ansible-runner)
    assert os.environ.get("ANSIBLE_CONFIG") == str(CFG)


def test_molecule_sets_the_same_interval():
    config = yaml.safe_load((ROOT / "extensions" / "molecule" / "config.yml").read_text())
    assert config["ansible"]["cfg"]["defaults"]["internal_poll_interval"] == _interval()


def test_ansible_core_reads_it_from_the_file():
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-config"), "dump", "--only-changed"],
                          capture_output=True, text=True, check=False, env=dict(os.environ, ANSIBLE_CONFIG=str(CFG)))
    assert proc.returncode == 0, proc.stderr
    assert "DEFAULT_INTERNAL_POLL_INTERVAL(%s) = %s" % (CFG, _interval()) in proc.stdout, proc.stdout
