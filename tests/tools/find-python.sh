#!/usr/bin/env bash
# Print the path of the first Python interpreter that runs, trying the given minor versions in order
# (e.g. `find-python.sh 3.14 3.13 3.12`): pythonX.Y on PATH, then pyenv's installed versions (whose shims answer
# only for the active version), then /usr/bin and /usr/local/bin. Exits 1, naming the versions, when none runs.
# Used by the Makefile: the development venv and each ansible-core of the matrix on a Python that core supports.
set -u
root=${PYENV_ROOT:-$HOME/.pyenv}
for v in "$@"; do
  candidates=("python$v")
  # pyenv's versions, newest patch release first
  while IFS= read -r d; do candidates+=("$d/bin/python$v"); done < <(ls -d "$root"/versions/"$v".* 2>/dev/null | sort -rV)
  candidates+=("/usr/local/bin/python$v" "/usr/bin/python$v")
  for c in "${candidates[@]}"; do
    exe=$("$c" -c 'import sys, venv, ensurepip; print(sys.executable)' 2>/dev/null) || continue
    [ -n "$exe" ] && { echo "$exe"; exit 0; }
  done
done
echo "error: no Python $* found that runs (with venv and ensurepip); Debian: apt-get install python3-venv, or pyenv install" >&2
exit 1
