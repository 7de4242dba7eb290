// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack character device: ioctls (include/uapi/linux/cxltrack.h),
 * events through read()/poll().
 *
 * Every ioctl copies its argument in, validates flags, reserved fields,
 * ranges and buffer sizes before it touches the device, and copies results
 * out only on success. An open file holds a reference on the tracker, so
 * it stays valid after remove(); it then answers -ENODEV.
 */
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cxltrack_core.h"

void cxlt_fill_info(struct cxlt_dev *cd, struct cxlt_info *info)
{
	const struct cxlt_caps *c = &cd->caps;

	memset(info, 0, sizeof(*info));
	info->uapi_version = CXLT_UAPI_VERSION;
	info->hw_version = c->hw_version;
	info->pages = c->pages;
	info->page_shift = c->page_shift;
	info->num_slots = c->num_slots;
	info->hot_bits = c->hot_bits;
	info->evq_depth_log2 = c->evq_depth_log2;
	info->chunk_shift = c->chunk_shift;
	info->num_chunks = c->num_chunks;
	info->disk_bits = c->disk_bits;
	info->block_bits = c->block_bits;
	info->tick_ns = c->tick_ns;
	info->harvest_align = CXLT_HARVEST_ALIGN_PAGES;
	info->id = cd->id;
	info->memdev_devfn = cd->memdev->devfn;
	info->memdev_bus = pci_domain_nr(cd->memdev->bus) << 8 | cd->memdev->bus->number;
}

int cxlt_read_stats(struct cxlt_dev *cd, struct cxlt_stats *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = cxlt_enter(cd, NULL);
	if (ret)
		return ret;
	s->reads = cxlt_rd64(cd, CXLT_STAT_READS_LO);
	s->writes = cxlt_rd64(cd, CXLT_STAT_WRITES_LO);
	s->decerr = cxlt_rd(cd, CXLT_STAT_DECERR);
	s->bat_inv = cxlt_rd(cd, CXLT_STAT_BAT_INV);
	s->evq_dropped = cxlt_rd(cd, CXLT_EVQ_DROPPED);
	s->err_status = cxlt_rd(cd, CXLT_ERR_STATUS);
	s->err_addr = cxlt_rd(cd, CXLT_ERR_ADDR);
	s->err_count = cxlt_rd(cd, CXLT_ERR_COUNT);
	cxlt_leave(cd);
	s->commands = atomic64_read(&cd->cnt.commands);
	s->cmd_errors = atomic64_read(&cd->cnt.cmd_errors);
	s->cmd_timeouts = atomic64_read(&cd->cnt.cmd_timeouts);
	s->irqs = atomic64_read(&cd->cnt.irqs);
	s->events = atomic64_read(&cd->cnt.events);
	s->events_lost = atomic64_read(&cd->cnt.events_lost);
	return 0;
}

static int cxlt_open(struct inode *inode, struct file *file)
{
	struct cxlt_dev *cd = container_of(inode->i_cdev, struct cxlt_dev, cdev);
	struct cxlt_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	cxlt_dev_get(cd);
	down_read(&cd->life);
	if (cd->dead) {
		up_read(&cd->life);
		cxlt_dev_put(cd);
		kfree(f);
		return -ENODEV;
	}
	f->cd = cd;
	cxlt_evq_add_file(cd, f);
	up_read(&cd->life);
	file->private_data = f;
	return stream_open(inode, file);
}

static int cxlt_release(struct inode *inode, struct file *file)
{
	struct cxlt_file *f = file->private_data;
	struct cxlt_dev *cd = f->cd;

	cxlt_raw_release(cd, f);
	cxlt_slots_release_file(cd, f);
	cxlt_evq_del_file(cd, f);
	kfree(f);
	cxlt_dev_put(cd);
	return 0;
}

static ssize_t cxlt_read(struct file *file, char __user *buf, size_t len,
			 loff_t *ppos)
{
	struct cxlt_file *f = file->private_data;
	struct cxlt_dev *cd = f->cd;
	struct cxlt_event ev[16];
	size_t max = len / sizeof(ev[0]);
	ssize_t done = 0;
	int n, ret;

	if (!max)
		return -EINVAL;
	for (;;) {
		if (READ_ONCE(cd->dead))
			return -ENODEV;
		if (cxlt_evq_pending(cd, f))
			break;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(cd->wq, cxlt_evq_pending(cd, f) ||
					       READ_ONCE(cd->dead));
		if (ret)
			return ret;
	}
	while (max) {
		n = cxlt_evq_pop(cd, f, ev, min_t(size_t, max, ARRAY_SIZE(ev)));
		if (!n)
			break;
		if (copy_to_user(buf + done, ev, n * sizeof(ev[0])))
			return done ? done : -EFAULT;
		done += n * sizeof(ev[0]);
		max -= n;
	}
	return done;
}

static __poll_t cxlt_poll(struct file *file, poll_table *wait)
{
	struct cxlt_file *f = file->private_data;
	struct cxlt_dev *cd = f->cd;
	__poll_t mask = 0;

	poll_wait(file, &cd->wq, wait);
	if (READ_ONCE(cd->dead))
		return EPOLLHUP | EPOLLERR;
	if (cxlt_evq_pending(cd, f))
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

static bool cxlt_rsvd_zero(const u64 *r, int n)
{
	while (n--)
		if (r[n])
			return false;
	return true;
}

static long cxlt_ioc_harvest(struct cxlt_file *f, void __user *argp)
{
	struct cxlt_dev *cd = f->cd;
	struct cxlt_harvest h;
	u64 need;
	int ret;

	if (copy_from_user(&h, argp, sizeof(h)))
		return -EFAULT;
	if (!cxlt_rsvd_zero(h.reserved, ARRAY_SIZE(h.reserved)))
		return -EINVAL;
	if (h.kind > CXLT_HARVEST_HOTNESS)
		return -EINVAL;
	if (h.start % CXLT_HARVEST_ALIGN_PAGES || h.count % CXLT_HARVEST_ALIGN_PAGES)
		return -EINVAL;
	if (!h.count || h.start >= cd->caps.pages || h.count > cd->caps.pages - h.start)
		return -ERANGE;
	need = h.kind == CXLT_HARVEST_HOTNESS ? h.count : h.count / 8;
	if (h.buf_len < need)
		return -EINVAL;
	/*
	 * A harvest with CLEAR cannot be undone: make sure the whole output
	 * buffer is writable before the first command (it is output anyway).
	 */
	if (!h.buf || !access_ok(u64_to_user_ptr(h.buf), need))
		return -EFAULT;
	if (clear_user(u64_to_user_ptr(h.buf), need))
		return -EFAULT;
	/* Dirty bits cleared here would be missing from a kernel dirty log. */
	if (h.kind == CXLT_HARVEST_DIRTY && h.flags & CXLT_HARVEST_F_CLEAR) {
		ret = cxlt_klog_user_begin(cd);
		if (ret)
			return ret;
	}
	ret = cxlt_do_harvest(cd, f, h.kind, h.start, h.count, h.flags, NULL,
			      u64_to_user_ptr(h.buf), &h.nr_set);
	if (h.kind == CXLT_HARVEST_DIRTY && h.flags & CXLT_HARVEST_F_CLEAR)
		cxlt_klog_user_end(cd);
	if (ret)
		return ret;
	if (put_user(h.nr_set, &((struct cxlt_harvest __user *)argp)->nr_set))
		return -EFAULT;
	return 0;
}

static long cxlt_ioc_slot_write(struct cxlt_file *f, void __user *argp)
{
	struct cxlt_slot_write w;
	void *buf;
	int ret;

	if (copy_from_user(&w, argp, sizeof(w)))
		return -EFAULT;
	if (w.flags || !cxlt_rsvd_zero(w.reserved, ARRAY_SIZE(w.reserved)))
		return -EINVAL;
	if (!w.len || w.offset >= CXLT_SLOT_BYTES || w.len > CXLT_SLOT_BYTES - w.offset)
		return -EINVAL;
	buf = memdup_user(u64_to_user_ptr(w.buf), w.len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = cxlt_do_slot_write(f->cd, f, w.slot, w.offset, buf, w.len);
	kfree(buf);
	return ret;
}

static long cxlt_ioc_slot_query(struct cxlt_file *f, void __user *argp)
{
	struct cxlt_slot_query q;
	u8 *mask = NULL;
	int ret;

	if (copy_from_user(&q, argp, sizeof(q)))
		return -EFAULT;
	if (q.flags || !cxlt_rsvd_zero(q.reserved, ARRAY_SIZE(q.reserved)))
		return -EINVAL;
	if (q.mask) {
		if (!access_ok(u64_to_user_ptr(q.mask), CXLT_MASK_BYTES))
			return -EFAULT;
		mask = kzalloc(CXLT_MASK_BYTES, GFP_KERNEL);
		if (!mask)
			return -ENOMEM;
	}
	ret = cxlt_do_slot_query(f->cd, f, &q, mask);
	if (!ret && mask && copy_to_user(u64_to_user_ptr(q.mask), mask, CXLT_MASK_BYTES))
		ret = -EFAULT;
	kfree(mask);
	if (!ret && copy_to_user(argp, &q, sizeof(q)))
		ret = -EFAULT;
	return ret;
}

static long cxlt_ioc_chunk_list(struct cxlt_file *f, void __user *argp)
{
	struct cxlt_dev *cd = f->cd;
	struct cxlt_chunk_list l;
	size_t len = DIV_ROUND_UP(cd->caps.num_chunks, 8);
	u8 *bitmap;
	int ret;

	if (copy_from_user(&l, argp, sizeof(l)))
		return -EFAULT;
	if (l.flags || !cxlt_rsvd_zero(l.reserved, ARRAY_SIZE(l.reserved)))
		return -EINVAL;
	if (l.buf_len < len)
		return -EINVAL;
	if (!l.buf || !access_ok(u64_to_user_ptr(l.buf), len))
		return -EFAULT;
	bitmap = kzalloc(len, GFP_KERNEL);
	if (!bitmap)
		return -ENOMEM;
	ret = cxlt_do_chunk_list(cd, f, l.owner, bitmap, &l.count);
	if (!ret && copy_to_user(u64_to_user_ptr(l.buf), bitmap, len))
		ret = -EFAULT;
	kfree(bitmap);
	if (!ret && copy_to_user(argp, &l, sizeof(l)))
		ret = -EFAULT;
	return ret;
}

static long cxlt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct cxlt_file *f = file->private_data;
	struct cxlt_dev *cd = f->cd;
	void __user *argp = (void __user *)arg;
	union {
		struct cxlt_info info;
		struct cxlt_bat bat;
		struct cxlt_slot_alloc sa;
		struct cxlt_slot_merge sm;
		struct cxlt_slot_release sr;
		struct cxlt_chunk ch;
		struct cxlt_stats st;
		struct cxlt_ctrl ctl;
		struct cxlt_raw raw;
	} u;
	int ret;

	if (_IOC_TYPE(cmd) != CXLT_IOC_MAGIC)
		return -ENOTTY;
	if (READ_ONCE(cd->dead))
		return -ENODEV;

	switch (cmd) {
	case CXLT_IOC_INFO:
		cxlt_fill_info(cd, &u.info);
		return copy_to_user(argp, &u.info, sizeof(u.info)) ? -EFAULT : 0;

	case CXLT_IOC_HARVEST:
		return cxlt_ioc_harvest(f, argp);

	case CXLT_IOC_BAT:
		if (copy_from_user(&u.bat, argp, sizeof(u.bat)))
			return -EFAULT;
		ret = cxlt_do_bat(cd, f, &u.bat, NULL);
		if (!ret && copy_to_user(argp, &u.bat, sizeof(u.bat)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_SLOT_ALLOC:
		if (copy_from_user(&u.sa, argp, sizeof(u.sa)))
			return -EFAULT;
		if (!cxlt_rsvd_zero(u.sa.reserved, ARRAY_SIZE(u.sa.reserved)))
			return -EINVAL;
		ret = cxlt_do_slot_alloc(cd, f, u.sa.tag, u.sa.flags, &u.sa.slot);
		if (!ret && put_user(u.sa.slot, &((struct cxlt_slot_alloc __user *)argp)->slot)) {
			/* Do not leak a slot nobody learnt about. */
			cxlt_do_slot_release(cd, f, u.sa.slot);
			ret = -EFAULT;
		}
		return ret;

	case CXLT_IOC_SLOT_WRITE:
		return cxlt_ioc_slot_write(f, argp);

	case CXLT_IOC_SLOT_MERGE:
		if (copy_from_user(&u.sm, argp, sizeof(u.sm)))
			return -EFAULT;
		if (u.sm.flags || !cxlt_rsvd_zero(u.sm.reserved, ARRAY_SIZE(u.sm.reserved)))
			return -EINVAL;
		ret = cxlt_do_slot_merge(cd, f, u.sm.slot, u.sm.page, NULL,
					 &u.sm.valid_bytes);
		if (!ret && copy_to_user(argp, &u.sm, sizeof(u.sm)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_SLOT_RELEASE:
		if (copy_from_user(&u.sr, argp, sizeof(u.sr)))
			return -EFAULT;
		if (u.sr.flags || !cxlt_rsvd_zero(u.sr.reserved, ARRAY_SIZE(u.sr.reserved)))
			return -EINVAL;
		return cxlt_do_slot_release(cd, f, u.sr.slot);

	case CXLT_IOC_SLOT_QUERY:
		return cxlt_ioc_slot_query(f, argp);

	case CXLT_IOC_CHUNK:
		if (copy_from_user(&u.ch, argp, sizeof(u.ch)))
			return -EFAULT;
		ret = cxlt_do_chunk(cd, f, &u.ch);
		if (!ret && copy_to_user(argp, &u.ch, sizeof(u.ch)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_CHUNK_LIST:
		return cxlt_ioc_chunk_list(f, argp);

	case CXLT_IOC_STATS:
		ret = cxlt_read_stats(cd, &u.st);
		if (!ret && copy_to_user(argp, &u.st, sizeof(u.st)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_CTRL:
		if (copy_from_user(&u.ctl, argp, sizeof(u.ctl)))
			return -EFAULT;
		ret = cxlt_set_ctrl(cd, &u.ctl);
		if (!ret && copy_to_user(argp, &u.ctl, sizeof(u.ctl)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_RAW:
		if (copy_from_user(&u.raw, argp, sizeof(u.raw)))
			return -EFAULT;
		ret = cxlt_raw(cd, f, &u.raw);
		if (!ret && u.raw.op == CXLT_RAW_READ &&
		    copy_to_user(argp, &u.raw, sizeof(u.raw)))
			ret = -EFAULT;
		return ret;

	default:
		return -ENOTTY;
	}
}

const struct file_operations cxlt_fops = {
	.owner = THIS_MODULE,
	.open = cxlt_open,
	.release = cxlt_release,
	.read = cxlt_read,
	.poll = cxlt_poll,
	.unlocked_ioctl = cxlt_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};
