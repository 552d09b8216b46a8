"""Let ``ansible-test`` create its virtual environments on a machine that reaches PyPI but not
ci-files.testing.ansible.com (where ansible-test downloads its ``get-pip.py`` bootstrap script).

ansible-test looks for the script in ``~/.ansible/test/cache/get_pip_<version>.py`` first. This writes a
stand-in there that installs the same pip version from the pip wheel (downloaded from PyPI with pip), taking
the same command line as get-pip.py. Nothing else of ansible-test changes.
"""

import glob
import os
import re
import subprocess
import sys

import ansible_test

STANDIN = '''"""Stand-in for get-pip.py written by calico_ops' tests/tools/ansible_test_pip_bootstrap.py."""
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WHEEL = sorted(glob.glob(os.path.join(HERE, "pip-wheels", "pip-%(version)s-*.whl")))[0]
sys.path.insert(0, WHEEL)
from pip._internal.cli.main import main  # noqa: E402

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--find-links", os.path.dirname(WHEEL)] + args))
'''


def pip_version():
    path = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
    with open(path) as f:
        match = re.search(r"default_packages = dict\(\s*pip='([^']+)'", f.read())
    if not match:
        sys.exit("ansible_test_pip_bootstrap: could not find ansible-test's pip version in " + path)
    return match.group(1)


def main():
    version = pip_version()
    cache = os.path.expanduser("~/.ansible/test/cache")
    target = os.path.join(cache, "get_pip_%s.py" % version.replace(".", "_"))
    wheels = os.path.join(cache, "pip-wheels")
    if not glob.glob(os.path.join(wheels, "pip-%s-*.whl" % version)):
        os.makedirs(wheels, exist_ok=True)
        print("==> downloading pip %s (wheel) for ansible-test's virtual environments" % version)
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                               "--only-binary=:all:", "-d", wheels, "pip==%s" % version])
    if not os.path.exists(target):
        with open(target + ".tmp", "w") as f:
            f.write(STANDIN % {"version": version})
        os.replace(target + ".tmp", target)


if __name__ == "__main__":
    main()
