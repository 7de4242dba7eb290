# SPDX-License-Identifier: Apache-2.0
"""Large stdin through the guest's real virtio-serial port, many requests in a row.

Regression test for requests with a large stdin that never got an answer (seen with
`cxltrack raw-batch` in tests/driver/test_vectors.py). Every request's stdin must reach
the guest command exactly: the guest hashes it and the host compares. Also with the
guest's CPUs kept busy, so that the agent reads its port late."""

from __future__ import annotations

import hashlib
import random
import time

from cxltrack.harness import Vm
from cxltrack.harness.agent import CHUNK

MIB = 1 << 20


def _push(vm: Vm, rng: random.Random, sizes: list[int]) -> None:
    for i, size in enumerate(sizes):
        blob = rng.randbytes(size)
        t = time.monotonic()
        res = vm.run("sha256sum", stdin=blob, timeout=120)
        got = res.out.split()[0] if res.out.split() else res.out
        assert got == hashlib.sha256(blob).hexdigest(), f"request {i}: {size} bytes of stdin, guest hash {got}"
        print(f"{size} bytes in {time.monotonic() - t:.2f} s")


def test_large_stdin_many_times_in_a_row(vm: Vm) -> None:
    rng = random.Random(20261121)
    # Sizes around the chunk size, then several MiB that are not a multiple of it.
    _push(vm, rng, [CHUNK - 1, CHUNK, CHUNK + 1, 7 * CHUNK + 3])
    _push(vm, rng, [4 * MIB + rng.randrange(CHUNK) for _ in range(10)])
    # Echoed back: a large stdin and then a large response on the same port.
    blob = rng.randbytes(3 * MIB + 17)
    assert vm.run("cat", stdin=blob, timeout=120).stdout == blob
    # The same with both guest CPUs spinning, so the agent gets to its port late.
    hogs = vm.run(
        "for i in 1 2; do setsid sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & echo $!; done"
    ).out.split()
    try:
        _push(vm, rng, [4 * MIB + rng.randrange(CHUNK) for _ in range(6)])
        # Stored as a file and checked there too (Vm.write_file sends the data as stdin).
        blob = rng.randbytes(2 * MIB + 5)
        vm.write_file("/tmp/stdin-check.bin", blob)
        res = vm.run("sha256sum /tmp/stdin-check.bin; stat -c %s /tmp/stdin-check.bin")
        assert res.out.split()[0] == hashlib.sha256(blob).hexdigest() and res.out.split()[-1] == str(len(blob))
    finally:
        vm.run(f"kill {' '.join(hogs)}", check=False)
