# SPDX-License-Identifier: Apache-2.0
"""A host lost to the platform, without a VM: the soft-lockup reader (harness/lockup.py) and
the plugin's re-run of a test whose host wedged (pytest_plugin.pytest_runtest_call with
pytest-rerunfailures, as mk/common.mk runs the VM suites). The report line is the one the
nested host printed when a vCPU stopped answering its IPIs in CI."""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path

import pytest

from cxltrack.harness.lockup import RIP_WITHIN, LockupWatch, in_own_module, stuck_report

CI_REPORT = (
    b"[ 1044.599918] watchdog: BUG: soft lockup - CPU#1 stuck for 961s! [khugepaged:41]\n"
    b"[ 1044.599997] Modules linked in: kvm_amd(OE) ccp kvm(OE) irqbypass cxltrack(OE)\n"
    b"[ 1044.600085] RIP: 0010:smp_call_function_many_cond+0x137/0x4c0\n"
)
CI_WHAT = "CPU#1 stuck for 961 s in khugepaged:41 at smp_call_function_many_cond+0x137/0x4c0"


def test_stuck_report_needs_the_threshold_and_says_where() -> None:
    early = b"[   30.1] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [kworker/0:1:12]\n"
    assert stuck_report(early, 120) is None
    assert stuck_report(early + CI_REPORT, 120) == CI_WHAT
    assert stuck_report(b"rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n", 0) is None
    # no RIP line yet: wait for the rest of the report's burst, then report without it
    assert stuck_report(early, 22) is None
    assert stuck_report(early + b"x\n" * (RIP_WITHIN + 1), 22) == "CPU#0 stuck for 22 s in kworker/0:1:12"


def test_a_cpu_stuck_in_the_projects_modules_is_a_bug_not_a_loss() -> None:
    ours = b"soft lockup - CPU#0 stuck for 130s! [cxltrack-scrub:9]\nRIP: 0010:cxlt_scrub+0x12/0x40 [cxltrack]\n"
    what = stuck_report(ours, 120)
    assert what == "CPU#0 stuck for 130 s in cxltrack-scrub:9 at cxlt_scrub+0x12/0x40 [cxltrack]"
    assert in_own_module(what)
    assert not in_own_module(CI_WHAT)
    assert not in_own_module("CPU#0 stuck for 130 s in x:1 at f+0x1/0x2 [virtio_blk]")


def test_watch_reads_a_growing_console_and_a_report_split_across_reads(tmp_path: Path) -> None:
    console = tmp_path / "console.log"
    console.write_bytes(b"booting\n" + CI_REPORT[:40])
    watch = LockupWatch(console, lambda _: None)
    assert watch.poll() is None  # half a line: not yet a report
    with open(console, "ab") as f:
        f.write(CI_REPORT[40:150])
    assert watch.poll() is None  # the report, but not yet its RIP line
    with open(console, "ab") as f:
        f.write(CI_REPORT[150:])
    assert watch.poll() == CI_WHAT
    assert watch.poll() == CI_WHAT  # stays reported
    assert LockupWatch(tmp_path / "missing.log", lambda _: None).poll() is None


def test_watch_calls_back_from_its_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cxltrack.harness.lockup.POLL_S", 0.05)
    console = tmp_path / "console.log"
    console.write_bytes(b"")
    seen: list[str] = []
    called = threading.Event()

    def lost(report: str) -> None:
        seen.append(report)
        called.set()

    watch = LockupWatch(console, lost).start()
    try:
        assert not called.wait(0.3)
        console.write_bytes(CI_REPORT)
        assert called.wait(5.0)
    finally:
        watch.stop()
    assert seen == [CI_WHAT]


def _run_with_reruns(pytester: pytest.Pytester) -> pytest.RunResult:
    """The inner tests under the plugin, with the re-run options of the VM suites (mk/common.mk)."""
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--reruns", "1", "--only-rerun", "^(HostWedged|GuestWedged):", "-rR"
    )


def test_a_test_whose_host_wedged_runs_again_and_others_do_not(pytester: pytest.Pytester) -> None:
    """The plugin turns a failure while a host of the test is wedged into HostWedged, and
    `--reruns 1 --only-rerun` runs that test once more; an ordinary failure is not run again."""
    pytester.makeconftest('pytest_plugins = ["cxltrack.harness.pytest_plugin"]\n')
    pytester.makepyfile(
        test_inner=textwrap.dedent("""
        import pytest
        from pathlib import Path
        from cxltrack.harness.pytest_plugin import HOSTS_KEY

        RUNS = []

        class Lost:
            class vm:
                class cfg:
                    workdir = Path("host0")
                @staticmethod
                def console_text():
                    return "[    2.1] cxltrack 0000:0d:00.1: cxltrack0: v1.0\\n"
            def wedge_report(self):
                return "CPU#1 stuck for 961 s in khugepaged:41" if len(RUNS) == 1 else None

        @pytest.fixture
        def host(request):
            request.node.stash[HOSTS_KEY] = [Lost()]

        def test_lost_then_fine(host):
            RUNS.append(1)
            if len(RUNS) == 1:
                raise TimeoutError("timed out")

        def test_plain_failure(host):
            assert False, "a real failure"
    """)
    )
    result = _run_with_reruns(pytester)
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "rerun": 1}, result.stdout.str()
    text = result.stdout.str()
    assert (
        "run again (the platform lost the machine): test_inner.py::test_lost_then_fine: "
        "cxltrack.harness.nested.HostWedged: host0: CPU#1 stuck for 961 s in khugepaged:41"
    ) in text
    assert "a real failure" in text


def test_a_test_whose_vm_triple_faulted_runs_again_and_one_whose_kernel_spoke_does_not(
    pytester: pytest.Pytester,
) -> None:
    """A VmReset with nothing on the VM's console (a triple fault: the platform) in a failure's
    chain, or a running VM of the test's hosts so reset (the failure itself only says the agent
    went away), makes it GuestWedged, run once more; a VmReset whose kernel printed a report (an
    oops, a panic: maybe the code under test) stays the test's failure."""
    pytester.makeconftest('pytest_plugins = ["cxltrack.harness.pytest_plugin"]\n')
    pytester.makepyfile(
        test_inner=textwrap.dedent("""
        import pytest
        from cxltrack.harness.agent import GuestError
        from cxltrack.harness.nested import VmReset
        from cxltrack.harness.pytest_plugin import HOSTS_KEY

        RUNS = []

        def test_silent_reset_then_fine():
            RUNS.append(1)
            if len(RUNS) == 1:
                try:
                    raise GuestError("response id 0 for request 127")
                finally:
                    raise VmReset("L2 VM vm-base was reset while in use with nothing on its console")

        def test_reset_after_an_oops():
            raise VmReset("L2 VM vm0 was reset while in use", ["BUG: unable to handle page fault"])

        class QuietVm:
            def silent_reset(self):
                return "L2 VM vm1 was reset while in use with nothing on its console" if len(LATER) == 1 else None

        class HostWithVm:
            vms = {0: QuietVm()}
            def wedge_report(self):
                return None

        LATER = []

        @pytest.fixture
        def host(request):
            request.node.stash[HOSTS_KEY] = [HostWithVm()]

        def test_running_vm_reset_mid_command_then_fine(host):
            LATER.append(1)
            if len(LATER) == 1:
                raise GuestError("guest command 'x': response id 0 for request 12")
    """)
    )
    result = _run_with_reruns(pytester)
    assert result.parseoutcomes() == {"passed": 2, "failed": 1, "rerun": 2}, result.stdout.str()
    text = result.stdout.str()
    assert (
        "run again (the platform lost the machine): test_inner.py::test_running_vm_reset_mid_command_then_fine: "
        "cxltrack.harness.vm.GuestWedged: L2 VM vm1 was reset while in use with nothing on its console"
    ) in text
    assert (
        "run again (the platform lost the machine): test_inner.py::test_silent_reset_then_fine: "
        "cxltrack.harness.vm.GuestWedged: L2 VM vm-base was reset while in use with nothing on its console "
        "(the platform: nested SVM on TCG)"
    ) in text
    assert "run again (the platform lost the machine): test_inner.py::test_reset_after_an_oops" not in text


def test_a_failure_after_the_hosts_kernel_spoke_leads_with_its_report(pytester: pytest.Pytester) -> None:
    """A test that fails while its host's console holds a kernel report (the host panicked, so
    its agent went away: the test's error only says the channel closed) fails as
    HostKernelReport with the report's first lines, its own error chained, and is not run
    again."""
    pytester.makeconftest('pytest_plugins = ["cxltrack.harness.pytest_plugin"]\n')
    pytester.makepyfile(
        test_inner=textwrap.dedent("""
        import pytest
        from pathlib import Path
        from cxltrack.harness.agent import GuestError
        from cxltrack.harness.pytest_plugin import HOSTS_KEY

        class Panicked:
            class vm:
                class cfg:
                    workdir = Path("host0")
                @staticmethod
                def console_text():
                    return (
                        "[   28.4] kvm: kvm [2386]: vcpu0, guest rIP: 0xffffffffa2c9d458 Unhandled WRMSR\\n"
                        "[   76.5] Kernel panic - not syncing: corrupted stack end detected inside scheduler\\n"
                        "[   76.6] CPU: 0 UID: 0 PID: 2394 Comm: ld-linux-x86-64\\n"
                    )
            vms = {}
            def wedge_report(self):
                return None

        @pytest.fixture
        def host(request):
            request.node.stash[HOSTS_KEY] = [Panicked()]

        def test_agent_gone(host):
            raise GuestError("guest command 'cxlt-racewrite': agent channel closed")
    """)
    )
    result = _run_with_reruns(pytester)
    assert result.parseoutcomes() == {"failed": 1}, result.stdout.str()
    text = result.stdout.str()
    assert (
        "HostKernelReport: host0 kernel: [   76.5] Kernel panic - not syncing: corrupted stack end "
        "detected inside scheduler | [   76.6] CPU: 0 UID: 0 PID: 2394 Comm: ld-linux-x86-64"
    ) in text, text
    assert "agent channel closed" in text
