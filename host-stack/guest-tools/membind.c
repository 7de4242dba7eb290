// SPDX-License-Identifier: Apache-2.0
/*
 * membind NODE CMD [ARG...]: run CMD with its memory bound to NUMA node NODE
 * (set_mempolicy(MPOL_BIND), inherited across execve), like
 * `numactl --membind=NODE`. Allocations that cannot be satisfied on NODE fail
 * instead of falling back to another node.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_BIND 2
#define MAX_NODES 1024

int main(int argc, char **argv)
{
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };
	const unsigned int bits = 8 * sizeof(unsigned long);
	char *end;
	long node;

	if (argc < 3) {
		fprintf(stderr, "usage: membind NODE CMD [ARG...]\n");
		return 2;
	}
	errno = 0;
	node = strtol(argv[1], &end, 10);
	if (errno || *end || end == argv[1] || node < 0 || node >= MAX_NODES) {
		fprintf(stderr, "membind: bad node '%s' (0..%d)\n", argv[1], MAX_NODES - 1);
		return 2;
	}
	mask[node / bits] |= 1UL << (node % bits);
	/* maxnode counts one more than the bits the kernel reads. */
	if (syscall(SYS_set_mempolicy, MPOL_BIND, mask, MAX_NODES + 1)) {
		fprintf(stderr, "membind: set_mempolicy(MPOL_BIND, node %ld): %s\n", node, strerror(errno));
		return 1;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "membind: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
