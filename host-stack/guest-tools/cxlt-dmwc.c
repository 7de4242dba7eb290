// SPDX-License-Identifier: Apache-2.0
/*
 * cxlt-dmwc: a dm-writecache device over a VM's swap disk, with its swap tier
 * (/dev/pmem0, the device's chunks) as the cache: MemFlex's hybrid swap area
 * (docs/swap-design.md section 5). Swap-outs land in the tier; when it fills
 * past the high watermark, dm-writecache writes the least recently written
 * blocks back to the disk (its LRU), which is MemFlex's "oldest pages to disk"
 * rule. The L2 image has no dmsetup (busybox), so the device-mapper ioctls are
 * issued here.
 *
 *   cxlt-dmwc create NAME p|s ORIGIN CACHE HIGH LOW   prints the /dev/dm-N node
 *   cxlt-dmwc status NAME                             prints the target's status
 *   cxlt-dmwc remove NAME
 *
 * p: the cache is persistent memory, used through DAX (a swap-out is a copy with
 * a CPU cache flush, no block I/O; the swap tier's virtio-pmem). s: the cache is
 * any block device, and dm-writecache commits its metadata with flush requests
 * — which a virtio-pmem device on device DAX fails (its QEMU cannot fsync a
 * character device). HIGH and LOW are dm-writecache's watermarks (percent of
 * the cache in use at which write-back starts and stops).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/dm-ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/fs.h>

#define BUFSZ 16384

/* An ioctl buffer: the header, then (for a table) one target spec and its
 * parameter string; dm needs 8-byte alignment of what follows the header. */
static union {
	struct dm_ioctl io;
	char raw[BUFSZ];
} buf;

static void init_io(const char *name)
{
	memset(&buf, 0, sizeof(buf));
	buf.io.version[0] = DM_VERSION_MAJOR;
	buf.io.version[1] = 0;
	buf.io.version[2] = 0;
	buf.io.data_size = sizeof(buf);
	buf.io.data_start = sizeof(struct dm_ioctl);
	snprintf(buf.io.name, sizeof(buf.io.name), "%s", name);
}

static int control(void)
{
	int fd = open("/dev/mapper/control", O_RDWR);

	if (fd < 0 && errno == ENOENT) {
		/* No udev in the guest: make the node (misc 10, minor 236). */
		mkdir("/dev/mapper", 0755);
		if (mknod("/dev/mapper/control", S_IFCHR | 0600, makedev(10, 236)) == 0)
			fd = open("/dev/mapper/control", O_RDWR);
	}
	if (fd < 0)
		fprintf(stderr, "cxlt-dmwc: /dev/mapper/control: %s (dm_mod loaded?)\n", strerror(errno));
	return fd;
}

static int dm(int fd, unsigned long req, const char *what)
{
	if (ioctl(fd, req, &buf) < 0) {
		fprintf(stderr, "cxlt-dmwc: %s %s: %s\n", what, buf.io.name, strerror(errno));
		return -1;
	}
	return 0;
}

static int sectors(const char *dev, uint64_t *out)
{
	int fd = open(dev, O_RDONLY);
	uint64_t bytes;

	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &bytes) < 0) {
		fprintf(stderr, "cxlt-dmwc: size of %s: %s\n", dev, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	*out = bytes >> 9;
	return 0;
}

static int percent(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	if (errno || *end || end == s || *out < 0 || *out > 100) {
		fprintf(stderr, "cxlt-dmwc: bad watermark '%s' (0..100)\n", s);
		return -1;
	}
	return 0;
}

static int create(int fd, char **argv)
{
	const char *name = argv[0], *mode = argv[1], *origin = argv[2], *cache = argv[3];
	struct dm_target_spec *spec;
	long high, low;
	uint64_t size;
	char *params;

	if (strcmp(mode, "p") && strcmp(mode, "s")) {
		fprintf(stderr, "cxlt-dmwc: mode '%s': p (DAX) or s (block device)\n", mode);
		return 2;
	}
	if (percent(argv[4], &high) || percent(argv[5], &low))
		return 2;
	if (low > high) {
		fprintf(stderr, "cxlt-dmwc: low watermark %ld above high %ld\n", low, high);
		return 2;
	}
	if (sectors(origin, &size))
		return 1;
	init_io(name);
	if (dm(fd, DM_DEV_CREATE, "create"))
		return 1;
	init_io(name);
	buf.io.target_count = 1;
	spec = (struct dm_target_spec *)(buf.raw + sizeof(struct dm_ioctl));
	spec->sector_start = 0;
	spec->length = size;
	snprintf(spec->target_type, sizeof(spec->target_type), "writecache");
	params = (char *)(spec + 1);
	/*
	 * 4096: one swap page per cache block. pause_writeback 0 (s mode only): by
	 * default write-back waits until no write went around the cache to the
	 * origin for 3 s; a full cache sends every new write around, so under a
	 * steady swap-out it would stay full and the newest pages would go to the
	 * disk, the opposite of the oldest-to-disk rule this device is for.
	 */
	if (!strcmp(mode, "s"))
		snprintf(params, BUFSZ - sizeof(struct dm_ioctl) - sizeof(*spec),
			 "s %s %s 4096 6 high_watermark %ld low_watermark %ld pause_writeback 0",
			 origin, cache, high, low);
	else
		snprintf(params, BUFSZ - sizeof(struct dm_ioctl) - sizeof(*spec),
			 "p %s %s 4096 4 high_watermark %ld low_watermark %ld", origin, cache, high,
			 low);
	spec->next = (uint32_t)(((sizeof(*spec) + strlen(params) + 1) + 7) & ~7UL);
	if (dm(fd, DM_TABLE_LOAD, "load table of")) {
		init_io(name);
		dm(fd, DM_DEV_REMOVE, "remove");
		return 1;
	}
	init_io(name); /* resume: make the loaded table live */
	if (dm(fd, DM_DEV_SUSPEND, "resume")) {
		init_io(name);
		dm(fd, DM_DEV_REMOVE, "remove");
		return 1;
	}
	printf("/dev/dm-%u\n", minor(buf.io.dev));
	return 0;
}

static int status(int fd, const char *name)
{
	struct dm_target_spec *spec;

	init_io(name);
	if (dm(fd, DM_TABLE_STATUS, "status of"))
		return 1;
	if (buf.io.target_count != 1) {
		fprintf(stderr, "cxlt-dmwc: %s has %u targets\n", name, buf.io.target_count);
		return 1;
	}
	spec = (struct dm_target_spec *)(buf.raw + buf.io.data_start);
	printf("%s %s\n", spec->target_type, (char *)(spec + 1));
	return 0;
}

int main(int argc, char **argv)
{
	int is_create = argc == 8 && !strcmp(argv[1], "create");
	int is_named = argc == 3 && (!strcmp(argv[1], "status") || !strcmp(argv[1], "remove"));
	int fd, ret;

	if (!is_create && !is_named) {
		fprintf(stderr, "usage: cxlt-dmwc create NAME p|s ORIGIN CACHE HIGH LOW\n"
				"       cxlt-dmwc status NAME | remove NAME\n");
		return 2;
	}
	fd = control();
	if (fd < 0)
		return 1;
	if (!strcmp(argv[1], "create")) {
		ret = create(fd, argv + 2);
	} else if (!strcmp(argv[1], "status")) {
		ret = status(fd, argv[2]);
	} else {
		init_io(argv[2]);
		ret = dm(fd, DM_DEV_REMOVE, "remove") ? 1 : 0;
	}
	close(fd);
	return ret;
}
