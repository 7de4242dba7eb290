// SPDX-License-Identifier: Apache-2.0
/* libcxltrack: see libcxltrack.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcxltrack.h"
#include "cxltrack_regs.h"

static int ioc(struct cxltrack *t, unsigned long req, void *arg)
{
	return ioctl(t->fd, req, arg) < 0 ? -errno : 0;
}

int cxltrack_open(const char *path, struct cxltrack **out)
{
	struct cxltrack *t;
	int ret;

	if (!path)
		path = "/dev/cxltrack0";
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	snprintf(t->path, sizeof(t->path), "%s", path);
	t->fd = open(path, O_RDWR | O_CLOEXEC);
	if (t->fd < 0) {
		ret = -errno;
		free(t);
		return ret;
	}
	ret = ioc(t, CXLT_IOC_INFO, &t->info);
	if (ret) {
		close(t->fd);
		free(t);
		return ret;
	}
	if (t->info.uapi_version != CXLT_UAPI_VERSION) {
		close(t->fd);
		free(t);
		return -EPROTO;
	}
	*out = t;
	return 0;
}

void cxltrack_close(struct cxltrack *t)
{
	if (!t)
		return;
	close(t->fd);
	free(t);
}

const char *cxltrack_strerror(int err)
{
	return strerror(err < 0 ? -err : err);
}

size_t cxltrack_harvest_bytes(unsigned int kind, uint64_t count)
{
	return kind == CXLT_HARVEST_HOTNESS ? count : (count + 7) / 8;
}

int cxltrack_harvest_part(struct cxltrack *t, unsigned int kind, uint64_t start,
			  uint64_t count, unsigned int flags, void *buf, size_t len,
			  uint64_t *nr_set, uint64_t *done)
{
	struct cxlt_harvest h = {
		.kind = kind, .flags = flags, .start = start, .count = count,
		.buf = (uintptr_t)buf, .buf_len = len,
	};
	int ret = ioc(t, CXLT_IOC_HARVEST, &h);

	/* done and nr_set are valid on success and on -EIO. */
	if (nr_set)
		*nr_set = h.nr_set;
	if (done)
		*done = h.done;
	return ret;
}

int cxltrack_harvest(struct cxltrack *t, unsigned int kind, uint64_t start,
		     uint64_t count, unsigned int flags, void *buf, size_t len,
		     uint64_t *nr_set)
{
	uint64_t done = 0, total = 0;
	int ret = 0;

	/* A short result (a signal arrived) is continued where it stopped. */
	while (done < count) {
		size_t off = cxltrack_harvest_bytes(kind, done);
		uint64_t n = 0, set = 0;

		ret = cxltrack_harvest_part(t, kind, start + done, count - done, flags,
					    (uint8_t *)buf + off, len - off, &set, &n);
		total += set;
		done += n;
		if (ret || !n)
			break;
	}
	if (nr_set)
		*nr_set = total;
	return ret;
}

static int bat(struct cxltrack *t, unsigned int op, uint64_t page, uint64_t *block,
	       uint32_t *disk)
{
	struct cxlt_bat b = { .op = op, .page = page };
	int ret;

	if (op == CXLT_BAT_SET) {
		b.block = *block;
		b.disk = *disk;
	}
	ret = ioc(t, CXLT_IOC_BAT, &b);
	if (ret)
		return ret;
	if (op == CXLT_BAT_GET || op == CXLT_BAT_DISCARD) {
		if (block)
			*block = b.block;
		if (disk)
			*disk = b.disk;
		return b.valid;
	}
	return 0;
}

int cxltrack_bat_set(struct cxltrack *t, uint64_t page, uint64_t block, uint32_t disk)
{
	return bat(t, CXLT_BAT_SET, page, &block, &disk);
}

int cxltrack_bat_get(struct cxltrack *t, uint64_t page, uint64_t *block, uint32_t *disk)
{
	return bat(t, CXLT_BAT_GET, page, block, disk);
}

int cxltrack_bat_clear(struct cxltrack *t, uint64_t page)
{
	return bat(t, CXLT_BAT_CLEAR, page, NULL, NULL);
}

int cxltrack_bat_discard(struct cxltrack *t, uint64_t page, uint64_t *block, uint32_t *disk)
{
	return bat(t, CXLT_BAT_DISCARD, page, block, disk);
}

int cxltrack_slot_alloc(struct cxltrack *t, uint64_t tag, unsigned int flags)
{
	struct cxlt_slot_alloc a = { .tag = tag, .flags = flags };
	int ret = ioc(t, CXLT_IOC_SLOT_ALLOC, &a);

	return ret ? ret : (int)a.slot;
}

int cxltrack_slot_write(struct cxltrack *t, unsigned int slot, unsigned int offset,
			const void *buf, unsigned int len)
{
	struct cxlt_slot_write w = {
		.slot = slot, .offset = offset, .len = len, .buf = (uintptr_t)buf,
	};

	return ioc(t, CXLT_IOC_SLOT_WRITE, &w);
}

int cxltrack_slot_merge(struct cxltrack *t, unsigned int slot, uint64_t page,
			uint64_t *valid_bytes)
{
	struct cxlt_slot_merge m = { .slot = slot, .page = page };
	int ret = ioc(t, CXLT_IOC_SLOT_MERGE, &m);

	if (!ret && valid_bytes)
		*valid_bytes = m.valid_bytes;
	return ret;
}

int cxltrack_slot_release(struct cxltrack *t, unsigned int slot)
{
	struct cxlt_slot_release r = { .slot = slot };

	return ioc(t, CXLT_IOC_SLOT_RELEASE, &r);
}

int cxltrack_slot_query(struct cxltrack *t, unsigned int slot,
			struct cxlt_slot_query *q, uint8_t *mask)
{
	memset(q, 0, sizeof(*q));
	q->slot = slot;
	q->mask = (uintptr_t)mask;
	return ioc(t, CXLT_IOC_SLOT_QUERY, q);
}

static int chunk(struct cxltrack *t, unsigned int op, unsigned int flags, unsigned int c,
		 unsigned int *owner, unsigned int *state)
{
	struct cxlt_chunk ch = { .op = op, .flags = flags, .chunk = c, .owner = *owner };
	int ret = ioc(t, CXLT_IOC_CHUNK, &ch);

	if (!ret && op == CXLT_CHUNK_QUERY) {
		*owner = ch.owner;
		*state = ch.state;
	}
	return ret;
}

int cxltrack_chunk_assign_flags(struct cxltrack *t, unsigned int c, unsigned int owner,
				unsigned int flags)
{
	return chunk(t, CXLT_CHUNK_ASSIGN, flags, c, &owner, NULL);
}

int cxltrack_chunk_assign(struct cxltrack *t, unsigned int c, unsigned int owner)
{
	return cxltrack_chunk_assign_flags(t, c, owner, 0);
}

int cxltrack_chunk_release(struct cxltrack *t, unsigned int c, unsigned int owner)
{
	return chunk(t, CXLT_CHUNK_RELEASE, 0, c, &owner, NULL);
}

int cxltrack_chunk_query(struct cxltrack *t, unsigned int c, unsigned int *state,
			 unsigned int *owner)
{
	*owner = 0;
	return chunk(t, CXLT_CHUNK_QUERY, 0, c, owner, state);
}

int cxltrack_chunk_list(struct cxltrack *t, unsigned int owner, uint8_t *bitmap,
			size_t len, uint64_t *count)
{
	struct cxlt_chunk_list l = {
		.owner = owner, .buf = (uintptr_t)bitmap, .buf_len = len,
	};
	int ret = ioc(t, CXLT_IOC_CHUNK_LIST, &l);

	if (!ret && count)
		*count = l.count;
	return ret;
}

int cxltrack_chunk_copy(struct cxltrack *t, unsigned int c, unsigned int owner,
			void *buf, size_t len)
{
	struct cxlt_chunk_copy cc = {
		.chunk = c, .owner = owner, .buf = (uintptr_t)buf, .buf_len = len,
	};

	return ioc(t, CXLT_IOC_CHUNK_COPY, &cc);
}

int cxltrack_stats(struct cxltrack *t, struct cxlt_stats *s)
{
	return ioc(t, CXLT_IOC_STATS, s);
}

int cxltrack_addr_page(struct cxltrack *t, const volatile void *addr, uint64_t *page)
{
	struct cxlt_addr_page ap = { .addr = (uintptr_t)addr };
	int ret = ioc(t, CXLT_IOC_ADDR_PAGE, &ap);

	if (!ret)
		*page = ap.page;
	return ret;
}

int cxltrack_bat_set_addrs(struct cxltrack *t, const struct cxlt_bat_addr *entries,
			   size_t count, size_t *done)
{
	int ret = 0;

	*done = 0;
	while (*done < count) {
		size_t n = count - *done;
		struct cxlt_bat_set_addrs a = {
			.entries = (uintptr_t)(entries + *done),
			.count = (uint32_t)(n < CXLT_BAT_ADDRS_MAX ? n : CXLT_BAT_ADDRS_MAX),
		};

		ret = ioc(t, CXLT_IOC_BAT_SET_ADDRS, &a);
		/* the driver says how far it got, on an error too (0 if it never started) */
		*done += a.done;
		if (ret)
			break;
	}
	return ret;
}

int cxltrack_ctrl(struct cxltrack *t, struct cxlt_ctrl *c)
{
	return ioc(t, CXLT_IOC_CTRL, c);
}

int cxltrack_event_scope(struct cxltrack *t, unsigned int scope)
{
	struct cxlt_event_scope s = { .scope = scope };

	return ioc(t, CXLT_IOC_EVENT_SCOPE, &s);
}

int cxltrack_view_open(struct cxltrack *t, unsigned int kind, uint64_t start, uint64_t count)
{
	struct cxlt_view v = { .op = CXLT_VIEW_OPEN, .kind = kind, .start = start, .count = count };

	return ioc(t, CXLT_IOC_VIEW, &v);
}

int cxltrack_view_close(struct cxltrack *t, unsigned int kind)
{
	struct cxlt_view v = { .op = CXLT_VIEW_CLOSE, .kind = kind };

	return ioc(t, CXLT_IOC_VIEW, &v);
}

int cxltrack_grant(struct cxltrack *t, unsigned int op, uint64_t start, uint64_t count)
{
	struct cxlt_grant g = { .op = op, .start = start, .count = count };

	return ioc(t, CXLT_IOC_GRANT, &g);
}

int cxltrack_events(struct cxltrack *t, struct cxlt_event *ev, int max, int timeout_ms)
{
	struct pollfd p = { .fd = t->fd, .events = POLLIN };
	ssize_t n;
	int r;

	if (max <= 0)
		return -EINVAL;
	r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	if (p.revents & (POLLHUP | POLLERR))
		return -ENODEV;
	n = read(t->fd, ev, (size_t)max * sizeof(*ev));
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	return (int)(n / (ssize_t)sizeof(*ev));
}

const char *cxltrack_event_name(unsigned int type)
{
	/* the register map's names (the driver asserts CXLT_EV_* == CXLT_EVENT_*) */
	static const char *const names[] = CXLT_EVENT_NAMES;

	if (type == CXLT_EV_RESET)
		return "RESET";
	if (type != CXLT_EVENT_NONE && type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "UNKNOWN";
}

int cxltrack_raw(struct cxltrack *t, unsigned int op, unsigned int offset,
		 unsigned int size, uint64_t *value)
{
	struct cxlt_raw r = { .op = op, .offset = offset, .size = size };
	int ret;

	if (value)
		r.value = *value;
	ret = ioc(t, CXLT_IOC_RAW, &r);
	if (!ret && op == CXLT_RAW_READ && value)
		*value = r.value;
	return ret;
}

static int read_sysfs(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static int read_u64(const char *path, uint64_t *v)
{
	char buf[64], *end;
	int ret = read_sysfs(path, buf, sizeof(buf));

	if (ret)
		return ret;
	errno = 0;
	*v = strtoull(buf, &end, 0);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

/* DPA of the first byte of a dax device, from the CXL region in sysfs. */
static int dax_dpa_base(const char *name, uint64_t *dpa)
{
	char path[PATH_MAX + 64], real[PATH_MAX], buf[64], *p;
	uint64_t dax_res, reg_res, ways, dpa_res;
	int ret;

	snprintf(path, sizeof(path), "/sys/bus/dax/devices/%s/resource", name);
	ret = read_u64(path, &dax_res);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/sys/bus/dax/devices/%s", name);
	if (!realpath(path, real))
		return -errno;
	p = strstr(real, "/region");
	if (!p)
		return -ENODEV;
	p = strchr(p + 1, '/');
	if (!p)
		return -ENODEV;
	*p = 0;			/* .../regionN */
	snprintf(path, sizeof(path), "%s/resource", real);
	ret = read_u64(path, &reg_res);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/interleave_ways", real);
	ret = read_u64(path, &ways);
	if (ret)
		return ret;
	if (ways != 1)
		return -EOPNOTSUPP;	/* v1: 1-way regions only */
	snprintf(path, sizeof(path), "%s/target0", real);
	ret = read_sysfs(path, buf, sizeof(buf));
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/sys/bus/cxl/devices/%s/dpa_resource", buf);
	ret = read_u64(path, &dpa_res);
	if (ret)
		return ret;
	if (dax_res < reg_res)
		return -EINVAL;
	*dpa = dax_res - reg_res + dpa_res;
	return 0;
}

int cxltrack_dax_open(const char *dev, size_t len, struct cxltrack_dax *d)
{
	const char *name = strrchr(dev, '/');
	int ret;

	name = name ? name + 1 : dev;
	memset(d, 0, sizeof(*d));
	ret = dax_dpa_base(name, &d->dpa_base);
	if (ret)
		return ret;
	/* devdax maps in units of its alignment (2 MiB here); round up. */
	len = (len + (2ul << 20) - 1) & ~((2ul << 20) - 1);
	d->fd = open(dev, O_RDWR | O_CLOEXEC);
	if (d->fd < 0)
		return -errno;
	d->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, 0);
	if (d->map == MAP_FAILED) {
		ret = -errno;
		close(d->fd);
		return ret;
	}
	d->len = len;
	return 0;
}

void cxltrack_dax_close(struct cxltrack_dax *d)
{
	if (d->map)
		munmap((void *)d->map, d->len);
	if (d->fd > 0)
		close(d->fd);
	memset(d, 0, sizeof(*d));
}

volatile uint8_t *cxltrack_dax_ptr(struct cxltrack_dax *d, uint64_t dpa, size_t len)
{
	if (dpa < d->dpa_base || dpa - d->dpa_base > d->len ||
	    len > d->len - (dpa - d->dpa_base))
		return NULL;
	return d->map + (dpa - d->dpa_base);
}
