"""The signature of Felix's bug projectcalico/calico#11016 in a calico-node log (localcp/felix_race.py), on lines as
Felix v3.31.4 wrote them in CI on 2026-11-29 (the pid 7063 of node-2 lost vxlan.calico; pid 27133 did not)."""

from localcp import felix_race

STATE = ('{t} [INFO][{pid}] felix/int_dataplane.go 1746: Linux interface state changed. ifIndex={i} '
         'ifaceName="{name}" state="{state}"')
RECREATE = ('{t} [WARNING][{pid}] felix/route_mgr.go 597: "vxlan.calico" exists with incompatible configuration: '
            'vni: 0 vs 4096; recreating device')
OTHER = '{t} [INFO][{pid}] felix/int_dataplane.go 2366: Received *proto.InSync update from calculation graph. msg='


def _state(t, pid, i, state, name="vxlan.calico"):
    return STATE.format(t=t, pid=pid, i=i, name=name, state=state)


# iptables-mode Felix (5453), then the eBPF one (7063) recreates the device and handles the new copy's "up" before
# the old copy's deletion: its last word on the name is "gone" while ifIndex 47 is up
LOST = "\n".join([
    "==== 2026-11-29T14:07:58 start #0 calico-system/calico-node-2z2z9/calico-node",
    _state("2026-11-29 14:07:59.730", 5453, 30, "up"),
    _state("2026-11-29 14:08:39.354", 7063, 30, "up"),
    RECREATE.format(t="2026-11-29 14:08:39.427", pid=7063),
    _state("2026-11-29 14:08:39.572", 7063, 47, "down"),
    _state("2026-11-29 14:08:39.573", 7063, 47, "up"),
    _state("2026-11-29 14:08:39.573", 7063, 30, "down"),
    _state("2026-11-29 14:08:39.573", 7063, 30, ""),
    OTHER.format(t="2026-11-29 14:08:40.100", pid=7063),
])

# the same switch in the order it usually comes: the old copy gone first, then the new one up
KEPT = "\n".join([
    _state("2026-11-29 14:04:58.311", 27133, 21, "up"),
    RECREATE.format(t="2026-11-29 14:04:58.374", pid=27133),
    _state("2026-11-29 14:04:58.501", 27133, 21, "down"),
    _state("2026-11-29 14:04:58.502", 27133, 21, ""),
    _state("2026-11-29 14:04:58.518", 27133, 30, "down"),
    _state("2026-11-29 14:04:58.519", 27133, 30, "up"),
])


def test_the_lost_device_is_found_with_both_ifindexes_and_when():
    found = felix_race.lost_device(LOST)
    assert found == {"pid": 7063, "at": found["at"], "gone": 30, "present": [47]}
    assert found["at"] == felix_race._epoch("2026-11-29 14:08:39.573")
    assert "ifIndex 30's deletion handled after ifIndex 47 came up" in felix_race.describe({"node-2": found})
    assert felix_race.ISSUE in felix_race.describe({"node-2": found})


def test_the_usual_order_is_not_a_loss():
    assert felix_race.lost_device(KEPT) is None


def test_a_later_felix_process_reads_the_devices_afresh():
    # Felix restarted after the loss (a new pid): its first word on the device is the live copy
    healed = LOST + "\n" + _state("2026-11-29 14:09:27.896", 9057, 47, "up")
    assert felix_race.lost_device(healed) is None
    # ... and a later process that logged nothing of the device yet is not judged by the earlier one
    assert felix_race.lost_device(LOST + "\n" + OTHER.format(t="2026-11-29 14:09:30.000", pid=9100)) is None


def test_a_loss_before_since_is_not_this_switch():
    at = felix_race._epoch("2026-11-29 14:08:39.573")
    assert felix_race.lost_device(LOST, since=at + 1) is None
    assert felix_race.lost_device(LOST, since=at - 60)["gone"] == 30


def test_only_the_named_device_and_only_after_a_recreation():
    other = LOST.replace('"vxlan.calico"', '"eth0"')
    assert felix_race.lost_device(other) is None
    # a device deleted with another copy up, but not by Felix's recreation of it (no warning): not this bug
    no_recreate = "\n".join(line for line in LOST.splitlines() if "recreating device" not in line)
    assert felix_race.lost_device(no_recreate) is None
    # the device simply gone (VXLAN turned off): nothing present
    gone = "\n".join([RECREATE.format(t="2026-11-29 14:08:39.427", pid=1),
                      _state("2026-11-29 14:08:39.500", 1, 30, ""), ])
    assert felix_race.lost_device(gone) is None


def test_the_lines_of_the_containers_other_processes_do_not_hide_felixs_loss():
    """calico-node's other processes write to the same log (seen in a run on 2026-12-06: monitor-addresses, pid
    6304, wrote the last line, 2 minutes after Felix 8067 lost the device): only Felix's lines say which process is
    the last Felix."""
    other = ("2026-11-29 14:09:02.621 [INFO][6304] monitor-addresses/autodetection_methods.go 103: Using "
             "autodetected IPv4 address on interface eth0: 10.250.208.6/30")
    found = felix_race.lost_device(LOST + "\n" + other)
    assert found and found["pid"] == 7063 and found["gone"] == 30 and found["present"] == [47]
