// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-failnth BDF MAX
 *
 * Probe error unwinding by fault injection (needs CONFIG_FAILSLAB and debugfs
 * with failslab/ignore-gfp-wait = N, so that GFP_KERNEL allocations count).
 * For n = 1, 2, ...: makes the n-th slab allocation of this task fail
 * (/proc/self/fail-nth) and binds the tracker BDF to cxltrack. The probe runs
 * in this task (a device without a NUMA node is probed in the caller), so
 * every allocation it makes is one of the n. After each bind it checks that
 * the outcome is whole: either bound, with its device node (then unbound
 * again), or not bound with nothing left (no driver link, no device node, no
 * class device). It stops when the n-th allocation was no longer reached (the
 * bind made fewer than n) or at MAX.
 *
 * Prints "ok failnth: R runs, I injected, F bind failures, B binds (errno
 * counts)" and exits 0; exits 1 on a half-bound state or when MAX runs still
 * injected, 2 on a system error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DRV "/sys/bus/pci/drivers/cxltrack"

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static void die(int code, const char *what)
{
	fprintf(stderr, "cxlt-failnth: %s: %s\n", what, strerror(errno));
	exit(code);
}

int main(int argc, char **argv)
{
	char link[256], num[32];
	unsigned long max, n;
	unsigned long injected = 0, failed = 0, bound = 0, err_count[256] = { 0 };
	int nth, bind, unbind;
	size_t len;

	if (argc != 3) {
		fprintf(stderr, "usage: cxlt-failnth BDF MAX\n");
		return 2;
	}
	max = strtoul(argv[2], NULL, 0);
	len = strlen(argv[1]);
	snprintf(link, sizeof(link), DRV "/%s", argv[1]);
	/* Opened once: the loop's own system calls then allocate little but the bind's. */
	nth = open("/proc/self/fail-nth", O_RDWR);
	bind = open(DRV "/bind", O_WRONLY);
	unbind = open(DRV "/unbind", O_WRONLY);
	if (nth < 0 || bind < 0 || unbind < 0)
		die(2, "open fail-nth, bind, unbind");
	for (n = 1; n <= max; n++) {
		ssize_t w, r;
		int e;

		snprintf(num, sizeof(num), "%lu", n);
		if (pwrite(nth, num, strlen(num), 0) < 0)
			die(2, "write fail-nth");
		w = pwrite(bind, argv[1], len, 0);
		e = errno;
		r = pread(nth, num, sizeof(num) - 1, 0);
		if (r < 0)
			die(2, "read fail-nth");
		num[r] = 0;
		/* 0: the n-th allocation failed; otherwise the countdown is still running */
		if (atoi(num) != 0) {
			if (pwrite(nth, "0", 1, 0) < 0)
				die(2, "clear fail-nth");
		} else {
			injected++;
		}
		/* The outcome is what is bound, whatever the write said. */
		if (exists(link)) {
			bound++;
			if (!exists("/dev/cxltrack0")) {
				fprintf(stderr, "n=%lu: bound without a device node\n", n);
				return 1;
			}
			if (pwrite(unbind, argv[1], len, 0) != (ssize_t)len)
				die(2, "unbind");
		} else {
			failed++;
			err_count[w < 0 ? e & 0xff : 0]++;
			if (exists("/dev/cxltrack0") || exists("/sys/class/cxltrack/cxltrack0")) {
				fprintf(stderr, "n=%lu: bind failed (%s) but left the device half bound\n",
					n, w < 0 ? strerror(e) : "no error");
				return 1;
			}
		}
		if (atoi(num) != 0)
			break; /* not reached: every allocation of the bind has been failed once */
	}
	printf("ok failnth: %lu runs, %lu injected, %lu bind failures, %lu binds (", n, injected,
	       failed, bound);
	for (int i = 0; i < 256; i++)
		if (err_count[i])
			printf(" %s: %lu", strerror(i), err_count[i]);
	printf(" )\n");
	if (n > max) {
		fprintf(stderr, "cxlt-failnth: still injecting at MAX %lu\n", max);
		return 1;
	}
	return 0;
}
