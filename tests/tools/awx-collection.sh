#!/usr/bin/env bash
# awx.awx for the development tools, into the collections path the Makefile and the tests use
# (.build/collections/ansible_collections/awx/awx). Only playbooks/awx/configure.yml uses it (requirements-awx.yml);
# ansible-lint, galaxy-importer and the AWX job tests resolve its modules. The `ansible` package carried awx.awx
# up to Ansible 12; Ansible 13 and 14 do not, and Galaxy is not reachable here, so it is taken from the Ansible 12
# wheel on PyPI (the release requirements-awx.yml names: awx.awx 24.6.1). Usage: awx-collection.sh PIP DEST_ROOT
set -euo pipefail
pip=$1 dest=$2
version=12.3.0
want=$dest/ansible_collections/awx/awx
[ -f "$want/MANIFEST.json" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "==> awx.awx for configure.yml's tools: from the ansible $version wheel (PyPI) into $want"
"$pip" download --quiet --no-deps --only-binary=:all: -d "$work" "ansible==$version"
wheel=$(ls "$work"/ansible-"$version"-*.whl)
"$(dirname "$pip")/python" - "$wheel" "$work/x" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("ansible_collections/awx/awx/")])
PY
mkdir -p "$(dirname "$want")"
rm -rf "$want"
mv "$work/x/ansible_collections/awx/awx" "$want"
