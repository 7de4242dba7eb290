# SPDX-License-Identifier: Apache-2.0
"""Host.start_vm boots an L2 VM once more when its kernel hung before init (VmBootHung: the
platform, TCG's nested SVM), never a third time, and never after any other failure; the hung
boot's logs are kept beside the next boot's. Without a VM: NestedVm is replaced by a fake."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, cast

import pytest

from cxltrack.harness import nested
from cxltrack.harness.agent import GuestError
from cxltrack.harness.nested import Host, VmBootHung, VmSpec


class FakeVm:
    """Fails its first `fails` starts with the given errors, then starts."""

    starts: ClassVar[int] = 0
    errors: ClassVar[list[Exception]] = []
    stopped: ClassVar[list[int]] = []

    def __init__(self, host: Host, spec: VmSpec, slot: int, workdir: Path) -> None:
        self.spec, self.slot, self.workdir = spec, slot, workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        FakeVm.starts += 1
        self.n = FakeVm.starts
        (self.workdir / "console.log").write_text(f"boot {self.n}\n")

    def start(self) -> FakeVm:
        if FakeVm.errors:
            raise FakeVm.errors.pop(0)
        return self

    def shutdown(self) -> None:
        FakeVm.stopped.append(self.n)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    FakeVm.starts, FakeVm.errors, FakeVm.stopped = 0, [], []

    def make(h: Host, spec: VmSpec, slot: int) -> Any:
        return FakeVm(h, spec, slot, tmp_path / spec.name)

    monkeypatch.setattr(nested, "NestedVm", make)
    h = Host.__new__(Host)
    h.vms = {}
    h.vm = cast(Any, SimpleNamespace(cfg=SimpleNamespace(workdir=tmp_path)))  # where NestedVm puts its logs
    return h


def test_a_boot_hung_before_init_boots_once_more(host: Host, tmp_path: Path, capsys: Any) -> None:
    FakeVm.errors = [VmBootHung("L2 VM vmc did not become ready: no ready greeting")]
    vm: Any = host.start_vm(VmSpec("vmc"))
    assert vm.n == 2 and FakeVm.stopped == [1] and list(host.vms.values()) == [vm]
    assert "its kernel hung before init" in capsys.readouterr().out
    assert (tmp_path / "vmc-hung-boot" / "console.log").read_text() == "boot 1\n"
    assert (tmp_path / "vmc" / "console.log").read_text() == "boot 2\n"


def test_a_second_hung_boot_is_the_tests(host: Host) -> None:
    FakeVm.errors = [VmBootHung("first"), VmBootHung("second")]
    with pytest.raises(VmBootHung, match="second"):
        host.start_vm(VmSpec("vmc"))
    assert FakeVm.stopped == [1, 2] and host.vms == {}


def test_any_other_failure_is_not_booted_again(host: Host) -> None:
    FakeVm.errors = [GuestError("L2 VM vmc did not become ready: the QEMU has exited")]
    with pytest.raises(GuestError, match="QEMU has exited"):
        host.start_vm(VmSpec("vmc"))
    assert FakeVm.starts == 1 and FakeVm.stopped == [1] and host.vms == {}
