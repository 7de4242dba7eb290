// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-relay: join a virtio-serial port of this guest to a Unix socket.
 *
 *   cxlt-relay PORT-NAME SOCKET-PATH
 *
 * Runs in a nested-virtualisation host (L1). The harness in L0 owns the other
 * end of the virtio-serial port PORT-NAME (a chardev socket of the L0 QEMU);
 * a VM's QEMU in L1 connects to SOCKET-PATH as a client (its agent or QMP
 * chardev). The relay listens on SOCKET-PATH, accepts one connection at a
 * time and copies bytes both ways, so the harness talks to the L2 agent and
 * the L2 QEMU's monitor with the same protocol as to a VM of its own.
 *
 * Bytes that arrive from the port while no client is connected belong to no
 * VM (a request to a VM that has gone) and are dropped; a new client starts
 * with a clean channel. The relay exits when the port goes away.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define BUF_SIZE (64 * 1024)

static int find_port(const char *name, char *dev, size_t len)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *e;
	int found = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[512], buf[256];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			buf[strcspn(buf, "\n")] = 0;
			if (!strcmp(buf, name)) {
				snprintf(dev, len, "/dev/%s", e->d_name);
				found = 0;
			}
		}
		fclose(f);
		if (!found)
			break;
	}
	closedir(d);
	return found;
}

/* Write all of buf; 0, or -1 if the peer is gone. */
static int write_all(int fd, const char *buf, ssize_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			poll(&p, 1, 100);
			continue;
		}
		if (w <= 0)
			return -1;
		buf += w;
		n -= w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char buf[BUF_SIZE];
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char dev[300];
	int port, lsn, cli = -1;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PORT-NAME SOCKET-PATH\n", argv[0]);
		return 2;
	}
	if (strlen(argv[2]) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "cxlt-relay: socket path too long: %s\n", argv[2]);
		return 2;
	}
	if (find_port(argv[1], dev, sizeof(dev))) {
		fprintf(stderr, "cxlt-relay: no virtio-serial port named %s\n", argv[1]);
		return 1;
	}
	port = open(dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (port < 0) {
		fprintf(stderr, "cxlt-relay: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	strcpy(addr.sun_path, argv[2]);
	unlink(argv[2]);
	lsn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lsn < 0 || bind(lsn, (struct sockaddr *)&addr, sizeof(addr)) || listen(lsn, 1)) {
		fprintf(stderr, "cxlt-relay: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = port, .events = POLLIN },
			{ .fd = cli >= 0 ? cli : lsn, .events = POLLIN },
		};
		ssize_t n;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("cxlt-relay: poll");
			return 1;
		}
		if (p[0].revents & POLLIN) {
			n = read(port, buf, sizeof(buf));
			if (n > 0 && cli >= 0 && write_all(cli, buf, n)) {
				close(cli);
				cli = -1;
			}
		} else if (p[0].revents & (POLLHUP | POLLERR)) {
			/* the L0 end is not connected (yet): do not spin */
			usleep(100000);
		}
		if (cli < 0 && (p[1].revents & POLLIN)) {
			cli = accept4(lsn, NULL, NULL, SOCK_CLOEXEC);
			continue;
		}
		if (cli >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			n = read(cli, buf, sizeof(buf));
			if (n <= 0 || write_all(port, buf, n)) {
				close(cli);
				cli = -1;
			}
		}
	}
}
