# SPDX-License-Identifier: Apache-2.0
"""Property (a) at the ioctl boundary and the event read() contract: a harvest with
CLEAR cut short by a signal, a contending file or a fault in its buffer reports how
far it got and loses no dirty bit; read() into a bad buffer keeps the record."""

from __future__ import annotations

from conftest import CACHE_PROBES, DAX, TrackerFactory, kprobe_trace


def test_harvest_clear_short_results_lose_nothing(tracker_vm: TrackerFactory) -> None:
    """Whole-device harvests with CLEAR (two device commands each) while a writer dirties
    pages, SIGUSR1 hits the harvester every 50-250 us, a second file keeps the engine busy
    and the output buffer is write-protected at random: the driver must stop between
    commands and say how many pages it harvested (or fail before the first), so that
    every write is reported by a harvest that ended after it."""
    t = tracker_vm()
    out = t.run(f"cxlt-test sigrace {DAX} 256 20 4242", timeout=300).out
    print(out)
    assert "ok sigrace" in out
    # The run must have exercised the short and failed paths, or it proves nothing.
    calls = out.split("calls (")[1]
    short, eintr, efault = (int(w.split()[0]) for w in calls.split(", ")[:3])
    assert short + eintr + efault > 0, out


def test_read_efault_keeps_the_event(tracker_vm: TrackerFactory) -> None:
    """read() into a read-only page and into an unmapped address gives EFAULT; the record
    stays queued and the next read() returns it."""
    t = tracker_vm()
    out = t.run(f"cxlt-test evfault {DAX}", timeout=60).out
    print(out)
    assert "ok evfault" in out


def _chunk_dpa(t, chunk: int) -> int:  # type: ignore[no-untyped-def]
    return chunk << t.cfg.chunk_shift


def test_reset_does_not_hand_out_unscrubbed_chunks(tracker_vm: TrackerFactory) -> None:
    """Owner 1 writes into its chunk; a function reset frees every chunk without a scrub
    (spec 7, 11); owner 2 then gets the same chunk and must read zeros, not owner 1's data."""
    t = tracker_vm()
    chunk = 2
    dpa = _chunk_dpa(t, chunk)
    t.run(f"cxltrack chunk assign {chunk} 1 --keep")
    t.run(f"cxlt-test poke {DAX} {dpa:#x} 5ec2e75ec2e7")
    assert t.run(f"cxlt-test peek {DAX} {dpa:#x} 6").out.strip() == "5ec2e75ec2e7"
    t.run(f"echo 1 > /sys/bus/pci/devices/{t.bdf}/reset")
    assert t.run(f"cxltrack chunk query {chunk}").out.strip() == "state=FREE owner=0"
    t.run(f"cxltrack chunk assign {chunk} 2 --keep")
    assert t.run(f"cxltrack chunk query {chunk}").out.strip() == "state=OWNED owner=2"
    got = t.run(f"cxlt-test peek {DAX} {dpa:#x} 6").out.strip()
    assert got == "000000000000", f"owner 2 reads owner 1's data after a reset: {got}"
    # A chunk released normally is scrubbed by the device; no second scrub needed.
    t.run(f"cxltrack chunk release {chunk} 2")
    t.run(f"cxltrack chunk assign {chunk} 3 --keep")
    assert t.run(f"cxltrack chunk query {chunk}").out.strip() == "state=OWNED owner=3"


def test_reset_gives_a_files_chunks_back(tracker_vm: TrackerFactory) -> None:
    """A chunk bound to an open file (a swap tier's pool) and written through /dev/dax survives
    a function reset: memory keeps its content, and the driver assigns the chunk to its owner
    again before anyone else can issue a command. The file gets one RESET record (nothing
    lost), the chunk is OWNED by the same owner with every page intact, another file may not
    assign it (EBUSY) or its owner id (EPERM) or release it (EPERM), and the owner's release
    scrubs it. A detached chunk of the same reset is FREE (and scrubbed before its next
    assignment, test_reset_does_not_hand_out_unscrubbed_chunks)."""
    t = tracker_vm()
    out = t.run(f"cxlt-test chunkreset {DAX} {t.bdf}", timeout=120).out
    print(out)
    assert "ok chunkreset" in out, out
    assert t.run("cxltrack chunk query 5").out.strip() == "state=FREE owner=0"
    t.run("cxltrack chunk assign 5 24 --keep")
    got = t.run(f"cxlt-test peek {DAX} {_chunk_dpa(t, 5):#x} 8").out.strip()
    assert got == "0" * 16, f"a detached chunk's next owner reads data from before the reset: {got}"
    t.run("cxltrack chunk release 5 24")


def test_reset_in_raw_mode_tells_the_file_it_lost_its_chunk(tracker_vm: TrackerFactory) -> None:
    """When the driver cannot give a bound chunk back after a reset (here: the reset comes
    while another file holds raw mode, so the driver may not command the device), the binding
    goes, the file's RESET record says it lost one chunk, its owner's CHUNK_LIST is empty, and
    the chunk's next owner gets it scrubbed (reads zeros where the first owner wrote)."""
    t = tracker_vm(raw=True)
    out = t.run(f"cxlt-test chunkresetraw {DAX}", timeout=120).out
    print(out)
    assert "ok chunkresetraw" in out, out


def test_a_file_closed_in_raw_mode_leaks_no_slot_or_chunk(tracker_vm: TrackerFactory) -> None:
    """A file that closes while another holds raw mode cannot have its slot and bound chunk
    released then (the driver may not command the device); they are released when raw mode
    ends. Before, they stayed OPEN/OWNED by nobody (the raw-write fuzzer's audit: 'slot 3 left
    in state 1 by closed files')."""
    t = tracker_vm(raw=True)
    out = t.run(f"cxlt-test closeraw {DAX}", timeout=120).out
    print(out)
    assert "ok closeraw" in out, out


def test_reset_restores_control_and_interrupts(tracker_vm: TrackerFactory) -> None:
    """After a function reset the driver restores CTRL and SLOT_TIMEOUT from its shadows and
    re-enables the interrupt (events arrive again)."""
    t = tracker_vm()
    t.run("echo 0 > /sys/class/cxltrack/cxltrack0/track_en")
    t.run("echo 777 > /sys/class/cxltrack/cxltrack0/slot_timeout")
    t.run(f"echo 1 > /sys/bus/pci/devices/{t.bdf}/reset")
    assert t.sysfs("track_en") == "0"
    assert t.sysfs("slot_timeout") == "777"
    t.run("echo 1 > /sys/class/cxltrack/cxltrack0/track_en")
    t.run("echo 0 > /sys/class/cxltrack/cxltrack0/slot_timeout")
    out = t.run(f"cxlt-test evfault {DAX}", timeout=60).out
    assert "ok evfault" in out


def test_raw_mode_exit_keeps_slot_ownership(tracker_vm: TrackerFactory) -> None:
    """A file's OPEN slot stays its own after another file entered and left raw mode:
    a third file gets EPERM on it, the owner keeps using it."""
    t = tracker_vm(raw=True)
    out = t.run(f"cxlt-test rawkeep {DAX}", timeout=60).out
    print(out)
    assert "ok rawkeep" in out


def test_suspend_resume_keeps_control(tracker_vm: TrackerFactory) -> None:
    """System suspend and resume (pm_test=devices: the drivers' suspend and resume run,
    the machine does not sleep): CTRL, SLOT_TIMEOUT and the interrupt work afterwards."""
    t = tracker_vm()
    if not t.run("test -w /sys/power/pm_test", check=False).ok:
        import pytest

        pytest.skip("guest kernel has no /sys/power/pm_test (CONFIG_PM_DEBUG)")
    t.run("echo 0 > /sys/class/cxltrack/cxltrack0/bat_inv_evt_en")
    t.run("echo 555 > /sys/class/cxltrack/cxltrack0/slot_timeout")
    t.run("echo devices > /sys/power/pm_test && echo freeze > /sys/power/state", timeout=120)
    dmesg = t.run("dmesg").out
    assert "cxltrack" in dmesg
    assert t.sysfs("slot_timeout") == "555"
    assert t.sysfs("bat_inv_evt_en") == "0"
    t.run("echo 0 > /sys/class/cxltrack/cxltrack0/slot_timeout")
    out = t.run(f"cxlt-test evfault {DAX}", timeout=60).out
    assert "ok evfault" in out


def test_unprivileged_tenants(tracker_vm: TrackerFactory) -> None:
    """Two files opened by root and handed to tenants without privileges (uid 65534): every
    operation that changes device-wide or page state is refused with EPERM (CLEAR/DECAY
    harvests, BAT set/clear/discard, slot merge, KEEP slots, chunk assign/release, CTRL
    changes), except a merge into and a discard of a page the tenant maps writable itself,
    naming that mapping (the driver checks it through the region's HPA map: `cxl-region
    track`); reads and a tenant's own slots work; the second tenant can neither touch the
    first one's slot nor read its events."""
    t = tracker_vm()
    t.run("cxl-region track", timeout=60)
    out = t.run(f"cxlt-test tenant {DAX}", timeout=60).out
    print(out)
    assert "ok tenant" in out
    # Without the per-file slot cap (tenant_slots as large as the device) the same run
    # must fail: the check is live.
    t.run(f"echo {t.cfg.slots} > /sys/module/cxltrack/parameters/tenant_slots")
    r = t.run(f"cxlt-test tenant {DAX}", timeout=60, check=False)
    assert r.status == 1 and "SLOT_ALLOC past tenant_slots: got success" in r.err, r.err


def test_interrupts_are_quiesced_before_a_function_reset(tracker_vm: TrackerFactory) -> None:
    """The driver masks the device's interrupts (INT_ENABLE 0) before a function reset, so no
    interrupt of the old state arrives while the device is reset, and unmasks them after. The
    tracker records INT_ENABLE at each reset (read-only `int-enable-at-reset`). Control: in raw
    mode the driver leaves the registers to the raw owner, so an INT_ENABLE the owner set is
    still set when its raw reset comes."""
    t = tracker_vm(raw=True)
    path = "/machine/peripheral/tracker0"
    assert t.vm.qmp is not None
    t.run(f"echo 1 > /sys/bus/pci/devices/{t.bdf}/reset", timeout=60)
    assert t.vm.qmp.command("qom-get", path=path, property="int-enable-at-reset") == 0
    # Enabled again afterwards: events still arrive by interrupt.
    assert "ok events" in t.run(f"cxlt-test events {DAX}", timeout=60).out
    out = t.run(f"printf 'W {0x34} 4 1\\nR {0x34} 4\\nRESET\\n' | cxltrack raw-batch", timeout=60).out
    assert out.split() == ["ok", "v", "1", "ok"], out
    assert t.vm.qmp.command("qom-get", path=path, property="int-enable-at-reset") == 1


def test_a_failed_clear_command_reports_its_pages_set(tracker_vm: TrackerFactory) -> None:
    """Property (a) when the device fails: the tracker's unstable x-miscount-harvests makes the
    next harvest answer one set page more than its window holds (after clearing, as a faulty
    device might). The driver must not trust it: the call fails with EIO, `done` covers the
    command and every page of it is reported set, since their state is unknown; the pages
    written before are therefore reported, although the device no longer has them."""
    t = tracker_vm()
    t.run(f"cxltrack harvest dirty 0 {t.cfg.pages} --clear --format count")
    assert t.vm.qmp is not None
    t.vm.qmp.command("qom-set", path="/machine/peripheral/tracker0", property="x-miscount-harvests", value=1)
    out = t.run(f"cxlt-test eio {DAX}").out
    print(out)
    assert "ok eio" in out
    assert t.vm.qmp.command("qom-get", path="/machine/peripheral/tracker0", property="x-miscount-harvests") == 0


def test_a_dropped_event_record_is_no_gap(tracker_vm: TrackerFactory) -> None:
    """The driver drops an event record of an undefined type (the tracker's unstable
    x-bad-events puts one before each of the next two events, numbered like any other); the
    record after it must arrive without the GAP flag, which tells a consumer that events were
    lost (the second round shows it: the first record of all follows no sequence)."""
    t = tracker_vm()
    assert t.vm.qmp is not None
    t.vm.qmp.command("qom-set", path="/machine/peripheral/tracker0", property="x-bad-events", value=2)
    out = t.run(f"cxlt-test evbad {DAX}", timeout=60).out
    print(out)
    assert "ok evbad" in out
    assert t.vm.qmp.command("qom-get", path="/machine/peripheral/tracker0", property="x-bad-events") == 0
    assert "bad event type 127" in t.run("dmesg").out


def test_consumer_views_keep_every_consumer_s_bits(tracker_vm: TrackerFactory) -> None:
    """Consumer views (CXLT_IOC_VIEW): another consumer's harvest with CLEAR leaves a view the
    pages it took from the device (dirty and accessed), and a view's CLEAR takes only its own.
    Then two tenants without privileges harvest with CLEAR through their views while a root
    consumer without a view clears the whole working set every few milliseconds and a writer
    thread writes: every page's last write reaches each tenant in a harvest that ended after
    it, and no tenant sees a page that was never written. Before views, a tenant could not
    clear at all (EPERM) and root's CLEARs took every other consumer's bits."""
    t = tracker_vm()
    out = t.run(f"cxlt-test views {DAX} 1024 10 31", timeout=300).out
    print(out)
    assert out.count("no lost write") == 2 and "no tenant lost a write" in out and "takes only its own" in out


def test_chunks_are_bound_to_the_file_that_assigned_them(tracker_vm: TrackerFactory) -> None:
    """A chunk is the assigning file's: no other file (root's included) releases it or takes
    its owner id, the file releases it without privileges and gets the release's SCRUB_DONE
    (another tenant does not), and closing the file or killing its process releases it; a
    detached chunk (--keep) stays."""
    t = tracker_vm()
    out = t.run(f"cxlt-test chunkbind {DAX}", timeout=60).out
    assert "ok chunkbind" in out, out
    detached = t.cfg.chunks - 5  # the test's detached chunk, owner 13: give it back
    assert t.run(f"cxltrack chunk query {detached}").out.strip() == "state=OWNED owner=13"
    t.run(f"cxltrack chunk release {detached} 13")
    # The CLI's assign without --keep is released when the command exits.
    t.run("cxltrack chunk assign 4 8")
    assert t.run("cxltrack chunk query 4").out.strip() != "state=OWNED owner=8"


def test_user_space_never_changes_pages_onlined_as_system_ram(tracker_vm: TrackerFactory) -> None:
    """With the region's HPA map registered (cxl-region track), a slot merge or BAT change from
    user space into a page of the region is refused once kmem has onlined it as System RAM (the
    page is the kernel's), and allowed while it is devdax. Reads stay allowed. (Named by the
    caller's own mapping, sets and discards are allowed there: the test below.)"""
    t = tracker_vm()
    t.run("cxl-region track", timeout=60)
    hpa, size, dpa = (int(x, 16) for x in t.sysfs("dirty_log/hpa_map").split()[:3])
    page = (dpa >> t.cfg.page_shift) + 64
    slot = t.run("cxltrack slot alloc 0x5a --keep").out.strip()
    t.run(f"cxltrack slot fill {slot} 0 4096 0x5a")
    t.run(f"cxltrack slot merge {slot} {page}")  # devdax: the page is the region's user's
    t.run(f"cxltrack bat set {page} 7 1")
    t.run(f"cxltrack bat clear {page}")
    t.run("cxl-region mode kmem", timeout=120)
    assert "driver=kmem" in t.run("cxl-region show").out
    slot = t.run("cxltrack slot alloc 0x5b --keep").out.strip()
    t.run(f"cxltrack slot fill {slot} 0 4096 0x5b")
    for cmd in (f"slot merge {slot} {page}", f"bat set {page} 7 1", f"bat discard {page}"):
        r = t.run(f"cxltrack {cmd}", check=False)
        assert r.status == 1 and "not permitted" in r.err, (cmd, r.status, r.err)
    # The slot was not consumed by the refused merge; reads are still fine.
    t.run(f"cxltrack slot release {slot}")
    t.run(f"cxltrack bat get {page}")
    t.run(f"cxltrack harvest dirty {page // 64 * 64} 64")
    assert size > 0 and hpa > 0


def test_a_mapping_tells_its_device_pages(tracker_vm: TrackerFactory) -> None:
    """CXLT_IOC_ADDR_PAGE answers the device page of each page of a dax mapping (so a client
    such as QEMU's dirty log need not be told where its memory is, nor be told wrongly) once
    the region's host-physical map is registered, and ENXIO before: the driver does not guess."""
    t = tracker_vm()
    t.run("echo clear > /sys/class/cxltrack/cxltrack0/dirty_log/hpa_map")
    r = t.run(f"cxlt-test addrpage {DAX}", timeout=60, check=False)
    assert r.status == 1 and "ADDR_PAGE: No such device or address" in r.err, (r.status, r.err)
    t.run("cxl-region track", timeout=60)
    out = t.run(f"cxlt-test addrpage {DAX}", timeout=60).out
    print(out)
    assert "ok addrpage" in out, out


CACHE_MARK = 0x6378746C63616368  # cxlt-test.c: the first 8 bytes of the page it discards
MERGED = 0xC3C3C3C3C3C3C3C3  # the same 8 bytes after the merge


def test_cache_contract_from_user_space(tracker_vm: TrackerFactory) -> None:
    """BAT_SET/BAT_DISCARD and SLOT_MERGE can name the caller's mapping of the page, and the
    driver then writes its lines back (and for a merge invalidates them afterwards); a
    misaligned or unmapped address fails before the device is asked; a harvest with WRITEBACK
    writes back every CPU cache first. TCG has no cache model, so the write-backs are seen
    where the driver asks the kernel for them: kprobes on clflush_cache_range() (the address's
    first 8 bytes must be the program's page, each flush one 4 KiB page) and on
    wbinvd_on_all_cpus()."""
    t = tracker_vm()
    out, events = kprobe_trace(t, CACHE_PROBES, f"cxlt-test cache {DAX}")
    print(out, *events, sep="\n")
    assert "ok cache" in out
    flushes = [a for n, a in events if n == "flush"]
    assert all(a["size"] == 4096 for a in flushes), flushes
    heads = [a["head"] for a in flushes]
    # BAT_SET, BAT_DISCARD, BAT_SET again and the merge's write-back see the mark; the bad
    # addresses flush nothing; the merge's invalidation after the command sees its bytes.
    assert heads.count(CACHE_MARK) == 4, [hex(h) for h in heads]
    assert heads.count(MERGED) == 1, [hex(h) for h in heads]
    assert sum(n == "wbinvd" for n, _ in events) == 1, events


def test_one_file_used_by_threads_a_dup_and_a_child(tracker_vm: TrackerFactory) -> None:
    """One open file used at once by threads (harvests with CLEAR, poll() + read(), slot and
    chunk life cycles, queries), by a dup() of its descriptor and by a fork()ed child, with the
    first descriptor closed half-way while a writer dirties pages: every call succeeds or
    fails as documented, no dirty bit is lost, and once every descriptor is closed the file's
    slots and chunks are back (the fixture also fails the test on any kernel splat)."""
    t = tracker_vm()
    out = t.run(f"cxlt-threads {DAX} 256 6", timeout=180).out
    print(out)
    assert "ok threads:" in out, out
    calls = int(out.split("ok threads: ")[1].split()[0])
    written = int(out.split("refused as documented), ")[1].split()[0])
    assert calls > 100 and written == 256, out


def test_bat_set_from_addresses_in_batches(tracker_vm: TrackerFactory) -> None:
    """CXLT_IOC_BAT_SET_ADDRS (a hypervisor's batch after its VM's disk reads): each entry's
    address finds its device page, batches over the maximum are split by libcxltrack, a bad
    entry stops the batch with the entries before it set and `done` saying how many, bad
    arguments and a caller without CAP_SYS_ADMIN are refused."""
    t = tracker_vm()
    t.run("cxl-region track", timeout=60)
    out = t.run(f"cxlt-batset {DAX}", timeout=120).out
    print(out)
    assert "ok batset:" in out, out


def test_bat_set_from_addresses_of_anonymous_memory_on_kmem(tracker_vm: TrackerFactory) -> None:
    """The region onlined as System RAM (kmem) and a process's anonymous memory bound to its
    node, as a VM's memory is when user space manages it with userfaultfd: the batch ioctl
    associates those pages through their addresses (BAT_SET by page number stays refused for
    System RAM), and a store still clears the association."""
    t = tracker_vm()
    t.run("cxl-region track", timeout=60)
    t.run("cxl-region mode kmem", timeout=120)
    out = t.run("cxl-region show").out
    node = [w.split("=", 1)[1] for w in out.split() if w.startswith("target_node=")]
    assert node and node[0].isdigit(), out
    got = t.run(f"membind {node[0]} cxlt-batset --anon", timeout=120).out
    print(got)
    assert "ok batset --anon:" in got, got
