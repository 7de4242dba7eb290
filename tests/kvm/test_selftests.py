# SPDX-License-Identifier: Apache-2.0
"""KVM's selftests (and the project's device_dirty_log_test on their library) in the L1
hypervisor, with all their memory on the cxltrack device (NUMA node 1), on the patched
KVM, on the patched KVM with the offload off, and on Debian's stock KVM.

Besides each selftest's exit code, the device dirty log's counters show which path KVM
took: with the offload on, a dirty-logged memslot on the device is logged by the device
(gfns mapped onto device pages, bits reported from harvests, the tracker harvested) and
KVM takes no write-protect fault for it; with the offload off or a dirty ring it is
write-protected as by stock KVM. Sizes are small: the emulated CXL window is slow under TCG
(a selftest's guest runs its code from device memory too).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from conftest import DIRTY_LOG, FULL, KSFT_SKIP, L1Host, Run


@dataclass(frozen=True)
class Selftest:
    label: str
    cmd: str
    # How the test uses dirty logging: "device" (a dirty-logged memslot from creation),
    # "enable" (logging switched on over mapped memory), "ring" (dirty ring), "none",
    # "prevent" (kvm/patches/0004's KVM_SET_PREVENT_READS; its memslot is dirty-logged too).
    logging: str
    # Too slow for `make test` (minutes under TCG): only in `make test-kvm-full`.
    full_only: bool = False

    def __str__(self) -> str:
        return self.label


SELFTESTS = [
    Selftest("dirty_log_test -M dirty-log", f"{DIRTY_LOG} -M dirty-log", "device"),
    Selftest("dirty_log_test -M clear-log", f"{DIRTY_LOG} -M clear-log", "device"),
    Selftest("dirty_log_test -M dirty-ring", f"{DIRTY_LOG} -M dirty-ring", "ring"),
    Selftest("device_dirty_log_test", "device_dirty_log_test -n 512 -r 4", "device"),
    Selftest("device_dirty_log_test -c", "device_dirty_log_test -n 512 -r 4 -c", "device"),
    Selftest("kvm_page_table_test", "kvm_page_table_test -b 4M", "enable"),
    # The False Reads Preventer (issue 14): guest writes to flagged pages land in device slots.
    Selftest("prevent_reads_test", "prevent_reads_test", "prevent"),
    Selftest("memslot_modification_stress_test", "memslot_modification_stress_test -b 1M -i 10", "none"),
    # Only "unmap chunked" (test 2) fits: map (0) trips the test's 10 s sync alarm on the
    # emulated window, unmap (1) takes ~6 min even in RAM, move/RW (3-5) touch 512 MiB,
    # more than the 256 MiB device (kvm/README.md, "Selftests").
    # ~4 min per build here, even though it only unmaps (no size option).
    Selftest("memslot_perf_test -f 2 -e 2", "memslot_perf_test -f 2 -e 2 -l 1 -r 1 -s 64", "none", full_only=True),
]
# On the patched build, dirty_log_test -M dirty-log/clear-log run in test_dirty_log.py
# (test_offload_with_writes_racing_get_clear), with the same checks and more. The
# offload-off build only where dirty logging happens (it is stock KVM elsewhere); the small
# matrix runs one test of each kind there and on the stock build.
OWN_ON_PATCHED = {"dirty_log_test -M dirty-log", "dirty_log_test -M clear-log"}
SMALL_ONLY_ON_PATCHED = {"device_dirty_log_test -c"}
MATRIX = (
    [("patched", t) for t in SELFTESTS if t.label not in OWN_ON_PATCHED]
    + [
        ("patched-off", t)
        for t in SELFTESTS
        if t.logging == "device" and (FULL or t.label in ("dirty_log_test -M clear-log", "device_dirty_log_test"))
    ]
    + [("stock", t) for t in SELFTESTS if FULL or t.label not in SMALL_ONLY_ON_PATCHED]
)


def check_path(build: str, t: Selftest, run: Run) -> None:
    """The device dirty log's counters must show the path the build takes for the test."""
    k, tr = run.kvm, run.tracker
    where = f"{build} {t.label}: kvm {k}, tracker {tr}"
    if build == "stock":
        assert not k, where
        return
    if build == "patched" and t.logging == "device":
        assert k["mapped"] > 0 and k["reported"] > 0 and k["syncs"] > 0, f"device path not used: {where}"
        assert k["wp_faults"] == 0, f"write-protect faults with the offload on: {where}"
        assert tr["syncs"] > 0 and tr["pages"] > 0, f"the tracker was not harvested: {where}"
        assert k["lost"] == 0 and tr["losses"] == 0, where
    elif build == "patched" and t.logging == "enable":
        assert k["mapped"] > 0 and k["wp_faults"] == 0, f"logging enabled over device pages: {where}"
    elif build == "patched-off" and t.logging == "device":
        assert k["mapped"] == 0 and k["reported"] == 0 and k["syncs"] == 0, f"offload off but used: {where}"
        assert k["wp_faults"] > 0, f"stock write protection took no fault: {where}"
    elif t.logging == "ring":
        # The dirty ring cannot carry the device's bits: write protection, as stock.
        assert k["mapped"] == 0 and k["wp_faults"] > 0, f"dirty ring not write-protected: {where}"


@pytest.mark.parametrize(("build", "test"), MATRIX, ids=[f"{b}-{t.label.replace(' ', '')}" for b, t in MATRIX])
def test_selftest(l1: L1Host, build: str, test: Selftest) -> None:
    if test.full_only and not FULL:
        pytest.skip(f"{test.label}: minutes under TCG, runs in make test-kvm-full")
    l1.use(build)
    run = l1.selftest(test.label, test.cmd)
    if test.label == "prevent_reads_test" and build == "stock":
        # Debian's KVM has no KVM_CAP_PREVENT_READS: the test must skip, not pass.
        assert run.rc == KSFT_SKIP, f"stock: prevent_reads_test exited {run.rc}:\n{run.out}"
        return
    assert run.rc == 0, f"{build}: {test.cmd} exited {run.rc}:\n{run.out}"
    check_path(build, test, run)
    if test.label == "prevent_reads_test":
        assert "prevent_reads_test: PASS" in run.out, run.out
    if test.cmd.startswith("device_dirty_log_test"):
        assert "device_dirty_log_test: PASS" in run.out, run.out
        if build == "patched":
            # Every harvest ran with the vCPU stopped: the final-round cache write-back.
            assert run.kvm["wbinvd"] == run.kvm["syncs"] > 0, run.kvm
