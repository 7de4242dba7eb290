# SPDX-License-Identifier: Apache-2.0
"""Which QEMU aborts the harness counts as the platform's (repeated once, as a lost machine):
only assertions in QEMU's own TCG core, never one in the project's device code."""

from cxltrack.harness.vm import machine_lost_to_platform, upstream_abort

IOTLB = (
    "qemu-system-x86_64: ../src/system/physmem.c:2738: iotlb_to_section: "
    "Assertion `section_index < d->map.sections_nb' failed."
)


def test_the_tcg_core_race_is_the_platforms() -> None:
    log = f"# /path/qemu-system-x86_64 -accel tcg ...\n{IOTLB}\n"
    assert upstream_abort(log) == IOTLB.split(": ", 1)[1]


def test_an_abort_in_the_projects_code_is_not() -> None:
    ours = "qemu-system-x86_64: ../src/hw/mem/cxltrack.c:812: cxlt_cmd: Assertion `slot < s->slots' failed."
    assert upstream_abort(ours) is None
    assert upstream_abort("qemu-system-x86_64: terminating on signal 15\n") is None
    assert upstream_abort("") is None


def test_a_silent_triple_fault_is_the_platforms() -> None:
    debug = "CPU Reset (CPU 0)\nRAX=0\nTriple fault\n"
    assert machine_lost_to_platform("", debug, kernel_report=False) == (
        "the guest triple-faulted with nothing on its console (nested SVM under TCG; cause open: docs/harness.md)"
    )


def test_a_triple_fault_after_a_kernel_report_is_the_reports() -> None:
    assert machine_lost_to_platform("", "Triple fault\n", kernel_report=True) is None


def test_a_machine_with_neither_was_not_lost_to_the_platform() -> None:
    assert machine_lost_to_platform("qemu-system-x86_64: terminating on signal 15\n", "CPU Reset\n", False) is None


def test_an_abort_in_the_tcg_core_is_a_loss_whatever_the_console_says() -> None:
    assert machine_lost_to_platform(f"{IOTLB}\n", "", kernel_report=True) == (
        f"QEMU aborted: {IOTLB.split(': ', 1)[1]} (the platform: a race in QEMU's TCG core)"
    )
