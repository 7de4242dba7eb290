// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack sysfs attributes of /sys/class/cxltrack/cxltrackN:
 *   configuration (read-only, from CAP_*): pages, page_shift, num_slots,
 *     hot_bits, evq_depth_log2, chunk_shift, num_chunks, disk_bits,
 *     block_bits, tick_ns, hw_version, memdev (BDF of function 0)
 *   control (read-write): track_en, bat_inv_evt_en, slot_timeout
 *   stats/: device and driver counters (harvests_list, harvests_bitmap:
 *     sysfs only, see cxlt_cnt_show())
 * Attributes that read the device return -ENODEV once it is gone.
 */
#include <linux/kstrtox.h>
#include <linux/stddef.h>
#include <linux/sysfs.h>

#include "cxltrack_core.h"

#define to_cxlt(d) container_of(d, struct cxlt_dev, dev)

/* An attribute that shows one u32/u64 field at @off of a structure. */
struct cxlt_attr {
	struct device_attribute attr;
	size_t off;
	u32 flag;
	bool wide;
};

#define to_cxlt_attr(a) container_of(a, struct cxlt_attr, attr)

static u64 cxlt_field(const void *base, const struct cxlt_attr *ca)
{
	const u8 *p = (const u8 *)base + ca->off;

	return ca->wide ? *(const u64 *)p : *(const u32 *)p;
}

static ssize_t cxlt_cap_show(struct device *d, struct device_attribute *a,
			     char *buf)
{
	return sysfs_emit(buf, "%llu\n", cxlt_field(&to_cxlt(d)->caps, to_cxlt_attr(a)));
}

#define CXLT_CAP(_n, _off, _wide) {					\
	.attr = __ATTR(_n, 0444, cxlt_cap_show, NULL),			\
	.off = _off,							\
	.wide = _wide,							\
}

#define CAP_OFF(f) offsetof(struct cxlt_caps, f)

static struct cxlt_attr cxlt_cap_attrs[] = {
	CXLT_CAP(pages, CAP_OFF(pages), true),
	CXLT_CAP(page_shift, CAP_OFF(page_shift), false),
	CXLT_CAP(num_slots, CAP_OFF(num_slots), false),
	CXLT_CAP(hot_bits, CAP_OFF(hot_bits), false),
	CXLT_CAP(evq_depth_log2, CAP_OFF(evq_depth_log2), false),
	CXLT_CAP(chunk_shift, CAP_OFF(chunk_shift), false),
	CXLT_CAP(num_chunks, CAP_OFF(num_chunks), false),
	CXLT_CAP(disk_bits, CAP_OFF(disk_bits), false),
	CXLT_CAP(block_bits, CAP_OFF(block_bits), false),
	CXLT_CAP(tick_ns, CAP_OFF(tick_ns), false),
};

static ssize_t hw_version_show(struct device *d, struct device_attribute *a,
			       char *buf)
{
	u32 v = to_cxlt(d)->caps.hw_version;

	return sysfs_emit(buf, "%u.%u\n", v >> 16, v & 0xffff);
}
static DEVICE_ATTR_RO(hw_version);

static ssize_t memdev_show(struct device *d, struct device_attribute *a,
			   char *buf)
{
	return sysfs_emit(buf, "%s\n", pci_name(to_cxlt(d)->memdev));
}
static DEVICE_ATTR_RO(memdev);

/* Control attributes: flag != 0 is a CTRL bit, flag == 0 the slot timeout. */
static ssize_t cxlt_ctrl_show(struct device *d, struct device_attribute *a,
			      char *buf)
{
	u32 flag = to_cxlt_attr(a)->flag;
	struct cxlt_ctrl c = {};
	int ret = cxlt_set_ctrl(to_cxlt(d), &c);

	if (ret)
		return ret;
	if (!flag)
		return sysfs_emit(buf, "%u\n", c.cur_timeout);
	return sysfs_emit(buf, "%u\n", !!(c.ctrl & flag));
}

static ssize_t cxlt_ctrl_store(struct device *d, struct device_attribute *a,
			       const char *buf, size_t len)
{
	u32 flag = to_cxlt_attr(a)->flag;
	struct cxlt_ctrl c = {};
	int ret;

	if (flag) {
		bool on;

		ret = kstrtobool(buf, &on);
		if (ret)
			return ret;
		if (on)
			c.set = flag;
		else
			c.clear = flag;
	} else {
		ret = kstrtou32(buf, 0, &c.slot_timeout);
		if (ret)
			return ret;
		c.flags = CXLT_CTRL_TIMEOUT;
	}
	ret = cxlt_set_ctrl(to_cxlt(d), &c);
	return ret ? ret : len;
}

#define CXLT_CTRL_ATTR(_n, _flag) {						\
	.attr = __ATTR(_n, 0644, cxlt_ctrl_show, cxlt_ctrl_store),	\
	.flag = _flag,							\
}

static struct cxlt_attr cxlt_ctrl_attrs[] = {
	CXLT_CTRL_ATTR(track_en, CXLT_CTRL_F_TRACK_EN),
	CXLT_CTRL_ATTR(bat_inv_evt_en, CXLT_CTRL_F_BAT_INV_EVT),
	CXLT_CTRL_ATTR(slot_timeout, 0),
};

static struct attribute *cxlt_attrs[] = {
	&cxlt_cap_attrs[0].attr.attr,
	&cxlt_cap_attrs[1].attr.attr,
	&cxlt_cap_attrs[2].attr.attr,
	&cxlt_cap_attrs[3].attr.attr,
	&cxlt_cap_attrs[4].attr.attr,
	&cxlt_cap_attrs[5].attr.attr,
	&cxlt_cap_attrs[6].attr.attr,
	&cxlt_cap_attrs[7].attr.attr,
	&cxlt_cap_attrs[8].attr.attr,
	&cxlt_cap_attrs[9].attr.attr,
	&dev_attr_hw_version.attr,
	&dev_attr_memdev.attr,
	&cxlt_ctrl_attrs[0].attr.attr,
	&cxlt_ctrl_attrs[1].attr.attr,
	&cxlt_ctrl_attrs[2].attr.attr,
	NULL,
};

static const struct attribute_group cxlt_attr_group = {
	.attrs = cxlt_attrs,
};

static ssize_t cxlt_stat_show(struct device *d, struct device_attribute *a,
			      char *buf)
{
	struct cxlt_stats s;
	int ret = cxlt_read_stats(to_cxlt(d), &s);

	return ret ? ret : sysfs_emit(buf, "%llu\n", cxlt_field(&s, to_cxlt_attr(a)));
}

#define CXLT_STAT(_n, _off) {						\
	.attr = __ATTR(_n, 0444, cxlt_stat_show, NULL),			\
	.off = _off,							\
	.wide = true,							\
}

#define STAT_OFF(f) offsetof(struct cxlt_stats, f)

/*
 * Driver counters in sysfs only. struct cxlt_stats has reserved room, but a
 * field there means a new CXLT_UAPI_VERSION (dma_commands came with 8), and
 * libcxltrack refuses a driver of any version but its own: tuning counters
 * are not worth breaking every built library.
 */
static ssize_t cxlt_cnt_show(struct device *d, struct device_attribute *a,
			     char *buf)
{
	const u8 *cnt = (const u8 *)&to_cxlt(d)->cnt;

	return sysfs_emit(buf, "%lld\n",
			  atomic64_read((const atomic64_t *)(cnt + to_cxlt_attr(a)->off)));
}

#define CXLT_CNT(_n, _off) {						\
	.attr = __ATTR(_n, 0444, cxlt_cnt_show, NULL),			\
	.off = _off,							\
}

#define CNT_OFF(f) offsetof(struct cxlt_counters, f)

static struct cxlt_attr cxlt_stat_attrs[] = {
	CXLT_STAT(reads, STAT_OFF(reads)),
	CXLT_STAT(writes, STAT_OFF(writes)),
	CXLT_STAT(decerr, STAT_OFF(decerr)),
	CXLT_STAT(bat_inv, STAT_OFF(bat_inv)),
	CXLT_STAT(evq_dropped, STAT_OFF(evq_dropped)),
	CXLT_STAT(err_status, STAT_OFF(err_status)),
	CXLT_STAT(err_count, STAT_OFF(err_count)),
	CXLT_STAT(commands, STAT_OFF(commands)),
	CXLT_STAT(cmd_errors, STAT_OFF(cmd_errors)),
	CXLT_STAT(cmd_timeouts, STAT_OFF(cmd_timeouts)),
	CXLT_STAT(irqs, STAT_OFF(irqs)),
	CXLT_STAT(events, STAT_OFF(events)),
	CXLT_STAT(events_lost, STAT_OFF(events_lost)),
	CXLT_STAT(dma_commands, STAT_OFF(dma_commands)),
	CXLT_CNT(harvests_list, CNT_OFF(harvests_list)),
	CXLT_CNT(harvests_bitmap, CNT_OFF(harvests_bitmap)),
};

static struct attribute *cxlt_stat_list[ARRAY_SIZE(cxlt_stat_attrs) + 1];

static struct attribute_group cxlt_stat_group = {
	.name = "stats",
	.attrs = cxlt_stat_list,
};

/* Called once at module init: fill the NULL-terminated stats list. */
void cxlt_sysfs_init(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cxlt_stat_attrs); i++)
		cxlt_stat_list[i] = &cxlt_stat_attrs[i].attr.attr;
}

const struct attribute_group *cxlt_groups[] = {
	&cxlt_attr_group,
	&cxlt_stat_group,
	&cxlt_klog_group,
	NULL,
};
