"""The reliability suite reuses the integration suites' helpers (stand-in CRDs and worlds, the real
calico-kube-controllers' Deployment of kube_controllers.py, the RBAC fixtures): tests/integration on sys.path, as
pytest puts it there for its own tests."""

import sys
from pathlib import Path

INTEGRATION = Path(__file__).resolve().parents[1] / "integration"
if str(INTEGRATION) not in sys.path:
    sys.path.insert(0, str(INTEGRATION))
