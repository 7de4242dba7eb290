// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-swapon [-p PRIO] DEVICE: swapon(2) with a priority. The image's busybox
 * (Debian's busybox-static 1.35) is built without FEATURE_SWAPON_PRI, so its
 * `swapon` has no -p; the swap tier (docs/swap-design.md section 5) needs the
 * guest's pmem swap area above its disk swap area. Without -p the kernel
 * gives the area its default (a negative, decreasing) priority, as `swapon`
 * does. `busybox mkswap` prepares the area and `busybox swapoff` stops it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/swap.h>

int main(int argc, char **argv)
{
	int flags = 0;
	const char *dev;
	char *end;
	long prio;

	if (argc == 4 && !strcmp(argv[1], "-p")) {
		errno = 0;
		prio = strtol(argv[2], &end, 10);
		if (errno || *end || end == argv[2] || prio < 0 || prio > SWAP_FLAG_PRIO_MASK) {
			fprintf(stderr, "cxlt-swapon: bad priority '%s' (0..%d)\n", argv[2],
				SWAP_FLAG_PRIO_MASK);
			return 2;
		}
		flags = SWAP_FLAG_PREFER | (int)(prio << SWAP_FLAG_PRIO_SHIFT);
		dev = argv[3];
	} else if (argc == 2 && argv[1][0] != '-') {
		dev = argv[1];
	} else {
		fprintf(stderr, "usage: cxlt-swapon [-p PRIO] DEVICE\n");
		return 2;
	}
	if (swapon(dev, flags)) {
		fprintf(stderr, "cxlt-swapon: swapon %s: %s\n", dev, strerror(errno));
		return 1;
	}
	return 0;
}
