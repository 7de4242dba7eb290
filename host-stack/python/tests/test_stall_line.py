# SPDX-License-Identifier: Apache-2.0
"""The one-line summary at the head of an unanswering L2 VM's diagnostics (harness/stall.py)."""

from __future__ import annotations

import shutil

from cxltrack.harness.stall import counters_moved, decode, hmp_bytes, kvm_moved, rips, stall_line, vcpu_threads

THREADS = [
    "tid 100 qemu-system-x86: S utime=5 stime=7 wchan=do_sys_poll",
    "    [<0>] do_sys_poll+0x1/0x2",
    "tid 104 CPU 0/KVM: R utime=1200 stime=3400 wchan=0",
    "tid 105 CPU 1/KVM: S utime=3 stime=4 wchan=kvm_vcpu_block",
    "tid 106 cxlt-mm-scan: S utime=1 stime=2 wchan=futex_wait",
]
KVM = [
    "KVM counters that moved in 2 s (/sys/kernel/debug/kvm/123-4):",
    "  exits +9000",
    "  mmio_exits +12",
    "  insn_emulation +8800",
    "  halt_exits +0",
]


def test_vcpu_threads_are_named_with_state_and_ticks() -> None:
    assert vcpu_threads(THREADS) == "CPU 0/KVM R 4600t, CPU 1/KVM S 7t"
    assert vcpu_threads(["tid 1 qemu: S utime=1 stime=1 wchan=0"]) == "none found"


def test_kvm_counters_largest_first() -> None:
    assert kvm_moved(KVM) == "exits+9000 insn_emulation+8800 mmio_exits+12 halt_exits+0"
    assert kvm_moved(KVM, top=1) == "exits+9000"
    assert kvm_moved(["no KVM debugfs directory for pid 3"]) == "nothing moved"


def test_manager_counters_that_changed_only() -> None:
    assert counters_moved({"a": 1, "b": 5, "c": 2}, {"a": 1, "b": 9, "c": 2}) == "b+4"
    assert counters_moved({"a": 1}, {"a": 1}) == "nothing moved"


def test_rips_say_when_one_instruction_repeats() -> None:
    same = ["RIP=ffffffff81000010 CR2=1 CR3=2 CPL=0"] * 3
    assert rips(same) == "ffffffff81000010 (same in 3 samples)"
    assert rips(["RIP=1 CR2=0", "RIP=2 CR2=0"]) == "1 2"
    assert rips(["(no answer: timeout)"]) == "not sampled"
    insns = "instructions at RIP: 0xffffffff81000010:  movl %eax, (%rdx) | 0xffffffff81000012:  ret"
    assert rips([*same, insns]) == "ffffffff81000010 (same in 3 samples): 0xffffffff81000010:  movl %eax, (%rdx)"


def test_the_line_holds_every_part_and_the_manager_only_when_read() -> None:
    line = stall_line(
        "vm-prevent", "running", THREADS, KVM, {"prevent-exits": 3}, {"prevent-exits": 90}, ["RIP=5"], 3.04
    )
    assert line.startswith("L2 vm-prevent while not answering: run state running; vCPU threads CPU 0/KVM R 4600t")
    assert "KVM in 2 s: exits+9000" in line
    assert "vCPU 0 RIP 5 (same in 1 samples)" in line
    assert line.endswith("memory manager in 3.0 s: prevent-exits+87")
    assert "memory manager" not in stall_line("vm", "internal-error", THREADS, KVM, None, {"x": 1}, [], 1.0)


def test_an_hmp_byte_dump_is_decoded() -> None:
    dump = "ffffffffc0984b40: 0x89 0x02 0x0f 0x0b 0x90 0xc3\n"
    code = hmp_bytes(dump)
    assert code == bytes([0x89, 0x02, 0x0F, 0x0B, 0x90, 0xC3])
    want = ["ffffffffc0984b40: mov %eax,(%rdx)", "ffffffffc0984b42: ud2", "ffffffffc0984b44: nop"]
    if shutil.which("objdump") is None:  # binutils comes with gcc, which make test installs
        want = ["ffffffffc0984b40: bytes 89 02 0f 0b 90 c3 (no objdump to decode them)"]
    assert decode(0xFFFFFFFFC0984B40, code) == want
    assert decode(0x10, b"") == ["(no bytes)"]
