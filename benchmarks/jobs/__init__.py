"""The jobs of ``make bench``, one file each (the job's class, the objects it builds, its naive playbook, its limit
and kubectl bulk contenders where it has them); ``JOBS`` is the command line's table, in the order they run."""

from benchmarks.jobs.datastore_migration import DatastoreMigration
from benchmarks.jobs.disable_ebpf import DisableEbpf
from benchmarks.jobs.host_endpoint_migration import HostEndpointMigration
from benchmarks.jobs.install_ebpf import InstallEbpf
from benchmarks.jobs.operator_migration import OperatorMigration
from benchmarks.jobs.owner_references import OwnerReferences
from benchmarks.jobs.preflight import Preflight
from benchmarks.jobs.upgrade import Upgrade

# each name is its file in this package: jobs/<name>.py
JOBS = {"preflight": Preflight, "owner_references": OwnerReferences,
        "host_endpoint_migration": HostEndpointMigration, "install_ebpf": InstallEbpf, "upgrade": Upgrade,
        "datastore_migration": DatastoreMigration, "operator_migration": OperatorMigration, "disable_ebpf": DisableEbpf}
