"""Each role's README.md against the role itself, so the two cannot drift: its Tags section names every tag that
tasks/main.yml gives a phase (``always`` aside), and every role variable it names (`<role>_...` in backticks) is an
option of the role's argument specs or a default of the role. No empty parentheses (a list that came out empty)."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())
MODULES = {p.stem for p in (ROOT / "plugins" / "modules").glob("*.py")}  # `datastore_migration_info` is a module


def _tags(role):
    text = (ROOT / "roles" / role / "tasks" / "main.yml").read_text()
    found = set()
    for group in re.findall(r"tags: \[([^\]]*)\]", text):
        found |= {t.strip() for t in group.split(",") if t.strip()}
    return found - {"always"}


def _names(role):
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    names = set()
    for spec in specs.values():
        names |= set((spec.get("options") or {}).keys())
    defaults = ROOT / "roles" / role / "defaults" / "main.yml"
    if defaults.is_file():
        names |= set((yaml.safe_load(defaults.read_text()) or {}).keys())
    # what the role publishes: registered results and facts it sets (`preflight_result`)
    for tasks in (ROOT / "roles" / role / "tasks").glob("*.yml"):
        text = tasks.read_text()
        names |= set(re.findall(r"register: (%s_[a-z0-9_]+)" % re.escape(role), text))
        names |= set(re.findall(r"^\s+(%s_[a-z0-9_]+):" % re.escape(role), text, re.M))
    return names


@pytest.mark.parametrize("role", ROLES)
def test_the_readme_names_every_phase_tag(role):
    readme = (ROOT / "roles" / role / "README.md").read_text()
    tags = _tags(role)
    if not tags:
        return
    section = readme.split("## Tags", 1)
    assert len(section) == 2, f"{role}: README.md has no Tags section, tasks/main.yml tags {sorted(tags)}"
    body = section[1].split("\n## ", 1)[0]
    assert [t for t in sorted(tags) if f"`{t}`" not in body] == [], f"{role}: tags missing from README.md"


@pytest.mark.parametrize("role", ROLES)
def test_the_readme_names_only_the_roles_own_variables(role):
    readme = (ROOT / "roles" / role / "README.md").read_text()
    named = set(re.findall(r"`(%s_[a-z0-9_]+)" % re.escape(role), readme)) - MODULES
    assert sorted(named - _names(role)) == [], f"{role}: README.md names variables the role does not have"
    assert "()" not in readme, f"{role}: README.md has empty parentheses"
