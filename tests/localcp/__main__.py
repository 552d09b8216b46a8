"""``python -m localcp {build,up,down,env,status}``: see cli.py."""
import sys

from .cli import main

sys.exit(main())
