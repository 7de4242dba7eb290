# SPDX-License-Identifier: Apache-2.0
"""The device dirty log in effect and under adversity, and the driver interface it uses:
guest writes racing KVM_GET_DIRTY_LOG / KVM_CLEAR_DIRTY_LOG with the log taken from the
device and no write-protect fault; pages migrated between NUMA nodes while the guest writes
them; the tracker losing its bits (PCI reset, tracking toggled) while KVM logs; user space
trying to clear the dirty bits KVM still needs; bad host-physical maps; and guest memory on
a devdax device (linear DPA)."""

from __future__ import annotations

import re

import pytest
from conftest import BIN, DIRTY_LOG, FULL, TRACKER, L1Host

from cxltrack import config as cxlconfig
from cxltrack.harness.kernlog import dmesg_splats
from cxltrack.harness.kvmstats import MOUNT_DEBUGFS
from cxltrack.harness.pytest_plugin import BootVm
from cxltrack.harness.tracker import tracker_topology

# Runs long enough (a few seconds of logging rounds) for another command to race it.
LONG_DIRTY_LOG = f"membind 1 {BIN}/dirty_log_test -b 4M -i 16 -I 300 -M dirty-log"


def background(l1: L1Host, cmd: str, tag: str) -> None:
    l1.run(f"cd /tmp && ({cmd} >/tmp/{tag}.log 2>&1; echo $? >/tmp/{tag}.rc) >/dev/null 2>&1 &")


def wait_background(l1: L1Host, tag: str, timeout: float = 300) -> tuple[int, str]:
    l1.run(f"i=0; while [ ! -e /tmp/{tag}.rc ]; do sleep 1; i=$((i+1)); [ $i -lt {int(timeout)} ] || exit 1; done")
    rc = int(l1.run(f"cat /tmp/{tag}.rc").out)
    return rc, l1.run(f"cat /tmp/{tag}.log").out


def wait_users(l1: L1Host, cond: str, tries: int = 240) -> None:
    """Until the tracker's count of open kernel dirty logs satisfies `cond` (e.g. "!= 0"):
    KVM opens one per dirty-logged memslot."""
    users = f"$(cat {TRACKER}/dirty_log/users)"
    l1.run(f"i=0; while ! [ {users} {cond} ]; do sleep 0.5; i=$((i+1)); [ $i -lt {tries} ] || exit 1; done")


@pytest.mark.parametrize("mode", ["dirty-log", "clear-log"])
def test_offload_with_writes_racing_get_clear(l1: L1Host, mode: str) -> None:
    """KVM's dirty_log_test with its memory on the device: the vCPU keeps writing while the
    host takes the log (KVM_GET_DIRTY_LOG, or GET + KVM_CLEAR_DIRTY_LOG with manual
    protection), and the test checks every page: a page written is in the log of that round
    or, if the write raced the harvest, of the next one. The counters show the offload:
    the gfns were mapped onto device pages and reported from the device's bits, the tracker
    was harvested, and KVM took zero write-protect faults (with the offload off the same run
    takes hundreds: test_selftests, patched-off)."""
    l1.use("patched")
    run = l1.selftest(f"dirty_log_test -M {mode}", f"{DIRTY_LOG} -M {mode}")
    assert run.rc == 0, f"dirty_log_test -M {mode} exited {run.rc}:\n{run.out}"
    k, tr = run.kvm, run.tracker
    assert k["mapped"] > 0 and k["syncs"] > 0, f"device path not used: {k}"
    assert k["reported"] > 0 and tr["dirty"] > 0, f"no dirty page came from the device: {k} {tr}"
    assert k["wp_faults"] == 0, f"write-protect faults for device pages: {k}"
    assert k["lost"] == 0 and tr["losses"] == 0, (k, tr)
    # The kernel dirty log's syncs harvest whole memslots: by DMA (spec 5.3), not RESULT reads.
    assert int(l1.run(f"cat {TRACKER}/stats/dma_commands").out) > 0, "no DMA harvest"


def test_page_migration_loses_no_dirty_bit(l1: L1Host) -> None:
    """A thread keeps moving the memslot's pages between node 1 (device) and node 0 while
    the guest writes: MMU-notifier invalidations drop the gfns' device pages and mark
    them dirty, pages off the device fall back to write protection. No written page may
    be missing from any round's log (device_dirty_log_test checks it)."""
    for build in ("patched", "stock") if FULL else ("patched",):
        l1.use(build)
        run = l1.selftest("device_dirty_log_test -m 0,1", "device_dirty_log_test -n 512 -r 4 -m 0,1")
        assert run.rc == 0 and "device_dirty_log_test: PASS" in run.out, run.out
        moves = int(re.search(r"moves=(\d+)", run.out).group(1))  # type: ignore[union-attr]
        assert moves > 0, run.out
        if build == "patched":
            assert run.kvm["invalidated"] > 0 and run.kvm["mapped"] > 0, run.kvm


@pytest.mark.parametrize("how", ["pci-reset", "track-toggle"])
def test_tracker_loss_reports_every_page(l1: L1Host, how: str) -> None:
    """The device loses its dirty bits while KVM logs (a PCI function reset clears the
    bitmap; tracking switched off and on leaves writes unrecorded), after the guest wrote
    and before KVM reads the log: the harvest must report the loss and KVM must report
    every page of the memslot on the device dirty (device_dirty_log_test -l checks that
    round and that the rounds after it are exact again), still with no write protection."""
    l1.use("patched")
    if how == "pci-reset":
        bdf = l1.run(f"basename $(readlink -f {TRACKER}/device)").out.strip()
        cmd = f"echo 1 > /sys/bus/pci/devices/{bdf}/reset"
    else:
        cmd = "cxltrack ctrl track_en=0 && cxltrack ctrl track_en=1"
    run = l1.selftest(f"device_dirty_log_test -l ({how})", f"device_dirty_log_test -n 512 -r 4 -l '{cmd}'")
    assert run.rc == 0 and "device_dirty_log_test: PASS" in run.out, run.out
    assert run.tracker["losses"] >= 1, f"the tracker recorded no loss: {run.tracker}"
    assert run.kvm["lost"] >= 1, f"KVM saw no failed harvest: {run.kvm}"
    assert run.kvm["mapped"] > 0 and run.kvm["wp_faults"] == 0, run.kvm


def test_user_space_clears_take_nothing_from_kvm_dirty_log(l1: L1Host) -> None:
    """While KVM logs device pages, user space harvests the whole device with CLEAR over and
    over: the bits it takes also go into the kernel log's shadow (a consumer view, driver
    README), so KVM's dirty_log_test, which fails on a page written but not reported dirty,
    still passes. Changing the host-physical map while a log is open is refused. Before
    consumer views the harvest was refused (EBUSY); without the hand-over it would steal
    KVM's bits."""
    l1.use("patched")
    l1.run("rm -f /tmp/busy.rc /tmp/busy.log")
    background(l1, LONG_DIRTY_LOG, "busy")
    wait_users(l1, "!= 0")
    pages = int(l1.run(f"cat {TRACKER}/pages").out)
    res = l1.run(f"echo clear > {TRACKER}/dirty_log/hpa_map", check=False)
    assert res.status != 0 and "busy" in res.err.lower(), res
    taken = l1.run(
        "n=0; h=0; while [ ! -e /tmp/busy.rc ]; do "
        f"c=$(cxltrack harvest dirty 0 {pages} --clear --format count) || exit 1; "
        "n=$((n + c)); h=$((h + 1)); done; echo $h $n",
        timeout=360,
    ).out.split()
    rc, log = wait_background(l1, "busy")
    assert rc == 0, log
    harvests, bits = int(taken[0]), int(taken[1])
    print(f"[kvm] {harvests} user-space CLEAR harvests took {bits} dirty bits while KVM logged")
    assert harvests > 0 and bits > 0, "the user-space harvests took nothing: no race happened"
    wait_users(l1, "= 0", tries=60)


def test_hpa_map_rejects_bad_input(l1: L1Host) -> None:
    """dirty_log/hpa_map takes "HPA SIZE DPA" of a range inside a CXL window and the device;
    anything else is refused with a clear errno and leaves the registered map alone."""
    path = f"{TRACKER}/dirty_log/hpa_map"
    before = l1.run(f"cat {path}").out
    hpa, size, dpa = (int(x, 16) for x in before.split()[:3])
    bad = {
        "garbage": "Invalid argument",
        "0x1 0x1000 0x0": "Invalid argument",  # unaligned
        f"{hpa:#x} 0x0 0x0": "Invalid argument",  # empty
        "0x1000 0x1000 0x0": "Numerical result out of range",  # not in a CXL window
        f"{hpa:#x} {2 * size:#x} {dpa:#x}": "Numerical result out of range",  # beyond the device
        f"{hpa:#x} {size:#x} {dpa:#x}": "File exists",  # already registered
        f"{hpa:#x} 0x1000 0x1000 trailing": "Invalid argument",
    }
    for line, err in bad.items():
        res = l1.run(f"echo '{line}' > {path}", check=False)
        assert res.status != 0 and err in res.err, (line, res)
    assert l1.run(f"cat {path}").out == before


def test_devdax_memory(boot_vm: BootVm) -> None:
    """Guest memory on a devdax mapping of the device (MAP_SHARED /dev/dax0.0: fixed,
    linearly mapped pages): the patched KVM logs it from the device, exactly, with no
    write-protect fault; stock KVM logs it by write protection, also exactly."""
    vm = boot_vm(topology=tracker_topology(cxlconfig.named("default")), command_timeout=600)
    vm.run("modprobe cxltrack && cxl-region create devdax && cxl-region track", timeout=120)
    vm.run(MOUNT_DEBUGFS)
    host = L1Host(vm)
    for build in ("patched", "stock"):
        host.use(build)
        for extra in ("", " -c") if build == "patched" or FULL else ("",):
            label = f"device_dirty_log_test -f /dev/dax0.0{extra} (devdax)"
            run = host.selftest(label, f"device_dirty_log_test -f /dev/dax0.0 -n 1024 -r 4{extra}", node=None)
            assert run.rc == 0 and "device_dirty_log_test: PASS" in run.out, run.out
            if build == "patched":
                assert run.kvm["mapped"] > 0 and run.kvm["reported"] > 0, run.kvm
                assert run.kvm["wp_faults"] == 0 and run.tracker["syncs"] > 0, (run.kvm, run.tracker)
    splats = dmesg_splats(vm)
    assert not splats, "\n".join(splats)
