// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack character device: ioctls (include/uapi/linux/cxltrack.h),
 * events through read()/poll().
 *
 * Every ioctl copies its argument in, validates flags, reserved fields,
 * ranges and buffer sizes before it touches the device, and copies results
 * out only on success. An open file holds a reference on the tracker, so
 * it stays valid after remove(); it then answers -ENODEV.
 *
 * Permissions (driver/README.md "Permissions"): the capability is checked
 * on the calling task at each call, so a privileged process can open the
 * device and hand the file to a tenant without privileges. Without
 * CAP_SYS_ADMIN a caller may only read (INFO, STATS, a CTRL query, a
 * harvest without CLEAR/DECAY, BAT_GET, CHUNK_QUERY/CHUNK_LIST), harvest
 * with CLEAR through its own view (CXLT_IOC_VIEW), use slots
 * it allocated itself and release chunks bound to it (cxltrack_chunk.c);
 * everything that changes device-wide state or a page's state needs
 * CAP_SYS_ADMIN, and no caller changes a page onlined as System RAM.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cxltrack_core.h"

static int cxlt_open(struct inode *inode, struct file *file)
{
	struct cxlt_dev *cd = container_of(inode->i_cdev, struct cxlt_dev, cdev);
	struct cxlt_file *f;
	int ret;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	cxlt_dev_get(cd);
	ret = cxlt_file_open(cd, f);
	if (ret) {
		cxlt_dev_put(cd);
		kfree(f);
		return ret;
	}
	file->private_data = f;
	return stream_open(inode, file);
}

static int cxlt_release(struct inode *inode, struct file *file)
{
	struct cxlt_file *f = file->private_data;
	struct cxlt_dev *cd = f->cd;

	cxlt_file_release(cd, f);
	kfree(f);
	cxlt_dev_put(cd);
	return 0;
}

/*
 * Copy queued records to @buf; a record leaves the ring only once it was
 * copied, so on -EFAULT it is still there for the next read().
 */
static ssize_t cxlt_read_queued(struct cxlt_file *f, char __user *buf,
				size_t max)
{
	struct cxlt_event ev[16];
	ssize_t done = 0;
	int n;

	if (mutex_lock_interruptible(&f->read_lock))
		return -EINTR;
	while (max) {
		n = cxlt_evq_peek(f->cd, f, ev, min_t(size_t, max, ARRAY_SIZE(ev)));
		if (!n)
			break;
		if (copy_to_user(buf + done, ev, n * sizeof(ev[0]))) {
			if (!done)
				done = -EFAULT;
			break;
		}
		cxlt_evq_consume(f->cd, f, n);
		done += n * sizeof(ev[0]);
		max -= n;
	}
	mutex_unlock(&f->read_lock);
	return done;
}

static ssize_t cxlt_read(struct file *file, char __user *buf, size_t len,
			 loff_t *ppos)
{
	struct cxlt_file *f = file->private_data;
	struct cxlt_dev *cd = f->cd;
	size_t max = len / sizeof(struct cxlt_event);
	ssize_t done;
	int ret;

	if (!max)
		return -EINVAL;
	for (;;) {
		if (READ_ONCE(cd->dead))
			return -ENODEV;
		if (cxlt_evq_pending(cd, f)) {
			done = cxlt_read_queued(f, buf, max);
			/* 0: another reader of this file took them first */
			if (done)
				return done;
		}
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(cd->wq, cxlt_evq_pending(cd, f) ||
					       READ_ONCE(cd->dead));
		if (ret)
			return ret;
	}
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

/* The operation changes device-wide or page state: CAP_SYS_ADMIN. */
static int cxlt_need_admin(void)
{
	return capable(CAP_SYS_ADMIN) ? 0 : -EPERM;
}

/*
 * User space never changes the state or contents of a page the kernel
 * onlined as System RAM (kmem): that page is the kernel's, and a merge
 * would write 4 KiB into it. In-kernel users (the KVM patch) may.
 */
static int cxlt_user_page_ok(struct cxlt_dev *cd, u64 page)
{
	if (page >= cd->caps.pages)
		return 0;	/* the command's own range check answers */
	if (cxlt_dpa_in_system_ram(cd, page << cd->caps.page_shift,
				   1ULL << cd->caps.page_shift))
		return -EPERM;
	return 0;
}

/* Whether an administrator granted the file @page (CXLT_IOC_GRANT). */
static bool cxlt_granted(struct cxlt_file *f, u64 page)
{
	bool in = false;
	unsigned int i;

	spin_lock(&f->grant_lock);
	for (i = 0; i < f->nr_grants && !in; i++)
		in = page >= f->grants[i].start &&
		     page - f->grants[i].start < f->grants[i].count;
	spin_unlock(&f->grant_lock);
	return in;
}

/*
 * Without CAP_SYS_ADMIN a caller may change a page it maps writable itself
 * (@addr, its address of the page), or one an administrator granted its file,
 * where the change gives it no more than writing the page would: a slot merge
 * into it, a discard of its association.
 */
static int cxlt_may_change_page(struct cxlt_file *f, u64 page, u64 addr)
{
	struct cxlt_dev *cd = f->cd;

	if (cxlt_user_page_ok(cd, page))
		return -EPERM;
	if (capable(CAP_SYS_ADMIN) || cxlt_granted(f, page) ||
	    (addr && cxlt_user_maps_page(cd, addr, page)))
		return 0;
	return -EPERM;
}

/*
 * A discard takes an association away and changes no data. Through the
 * caller's own writable mapping of the page it is allowed on a page onlined
 * as System RAM too (a VM's memory on a kmem node, whose associations the
 * hypervisor set with BAT_SET_ADDRS): otherwise a disk write could not take
 * away the association of a page that no longer equals its block.
 */
static int cxlt_may_discard(struct cxlt_file *f, u64 page, u64 addr)
{
	if (addr && cxlt_user_maps_page(f->cd, addr, page))
		return 0;
	return cxlt_may_change_page(f, page, addr);
}

static bool cxlt_rsvd_zero(const u64 *r, int n)
{
	while (n--)
		if (r[n])
			return false;
	return true;
}

static void cxlt_grant_add(struct cxlt_file *f, u64 start, u64 count)
{
	f->grants[f->nr_grants].start = start;
	f->grants[f->nr_grants].count = count;
	f->nr_grants++;
}

static long cxlt_ioc_grant(struct cxlt_file *f, void __user *argp)
{
	struct cxlt_grant g;
	unsigned int i;
	int ret = 0;

	if (copy_from_user(&g, argp, sizeof(g)))
		return -EFAULT;
	if (g.flags || g.op > CXLT_GRANT_REVOKE ||
	    !cxlt_rsvd_zero(g.reserved, ARRAY_SIZE(g.reserved)) || !g.count)
		return -EINVAL;
	if (g.start >= f->cd->caps.pages || g.count > f->cd->caps.pages - g.start)
		return -ERANGE;
	/* A grant hands out pages: the administrator's, like BAT_SET. */
	if (cxlt_need_admin())
		return -EPERM;
	spin_lock(&f->grant_lock);
	for (i = 0; i < f->nr_grants; i++)
		if (f->grants[i].start == g.start && f->grants[i].count == g.count)
			break;
	if (g.op == CXLT_GRANT_ADD && i < f->nr_grants)
		;	/* granted already */
	else if (g.op == CXLT_GRANT_ADD && f->nr_grants == CXLT_GRANTS_MAX)
		ret = -ENOSPC;
	else if (g.op == CXLT_GRANT_ADD)
		cxlt_grant_add(f, g.start, g.count);
	else if (i == f->nr_grants)
		ret = -ENOENT;
	else
		f->grants[i] = f->grants[--f->nr_grants];
	spin_unlock(&f->grant_lock);
	return ret;
}

static long cxlt_ioc_harvest(struct cxlt_file *f, void __user *argp)
{
	struct cxlt_harvest __user *uh = argp;
	struct cxlt_dev *cd = f->cd;
	struct cxlt_pview *v;
	struct cxlt_harvest h;
	u64 need;
	int ret;

	if (copy_from_user(&h, argp, sizeof(h)))
		return -EFAULT;
	/* Everything is validated before buf or the device is touched. */
	if (h.reserved)
		return -EINVAL;
	ret = cxlt_harvest_check(cd, h.kind, h.start, h.count, h.flags);
	if (ret)
		return ret;
	need = h.kind == CXLT_HARVEST_HOTNESS ? h.count : h.count / 8;
	if (h.buf_len < need)
		return -EINVAL;
	if (!h.buf || !access_ok(u64_to_user_ptr(h.buf), need))
		return -EFAULT;
	/*
	 * The results go into the argument; make sure it takes them before a
	 * command with CLEAR runs. Each command's part of buf is pinned by
	 * cxlt_do_harvest() before the command, so a fault there stops the
	 * harvest with nothing lost.
	 */
	if (put_user(0, &uh->done) || put_user(0, &uh->nr_set))
		return -EFAULT;
	if (down_read_interruptible(&f->view_sem))
		return -EINTR;
	v = h.kind < CXLT_VIEW_KINDS ? f->view[h.kind] : NULL;
	if (v && (h.start < v->start || h.start - v->start > v->count ||
		  h.count > v->count - (h.start - v->start))) {
		ret = -ERANGE;
		goto out;
	}
	/*
	 * A CLEAR through the file's view takes no other consumer's bits
	 * (cxltrack_view.c). Otherwise CLEAR and DECAY change what every
	 * consumer without a view sees, and WRITEBACK flushes every CPU.
	 */
	if (h.flags && !(v && h.flags == CXLT_HARVEST_F_CLEAR) &&
	    cxlt_need_admin()) {
		ret = -EPERM;
		goto out;
	}
	ret = cxlt_do_harvest(cd, f, v, h.kind, h.start, h.count, h.flags,
			      NULL, u64_to_user_ptr(h.buf), &h.nr_set, &h.done);
	if (put_user(h.nr_set, &uh->nr_set) || put_user(h.done, &uh->done))
		ret = -EFAULT;
out:
	up_read(&f->view_sem);
	return ret;
}

static long cxlt_ioc_view(struct cxlt_file *f, void __user *argp)
{
	struct cxlt_view v;
	int ret;

	if (copy_from_user(&v, argp, sizeof(v)))
		return -EFAULT;
	if (v.flags || v.reserved0 || !cxlt_rsvd_zero(v.reserved, ARRAY_SIZE(v.reserved)) ||
	    v.op > CXLT_VIEW_CLOSE || v.kind >= CXLT_VIEW_KINDS ||
	    (v.op == CXLT_VIEW_CLOSE && (v.start || v.count)))
		return -EINVAL;
	if (down_write_killable(&f->view_sem))
		return -EINTR;
	if (v.op == CXLT_VIEW_OPEN)
		ret = cxlt_view_open(f->cd, f, v.kind, v.start, v.count);
	else
		ret = cxlt_view_close(f->cd, f, v.kind);
	up_write(&f->view_sem);
	return ret;
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

static long cxlt_ioc_chunk_copy(struct cxlt_file *f, void __user *argp)
{
	struct cxlt_dev *cd = f->cd;
	struct cxlt_chunk_copy c;
	size_t len = (size_t)1 << cd->caps.chunk_shift;

	if (copy_from_user(&c, argp, sizeof(c)))
		return -EFAULT;
	if (c.flags || c.reserved0 ||
	    !cxlt_rsvd_zero(c.reserved, ARRAY_SIZE(c.reserved)))
		return -EINVAL;
	if (c.buf_len < len)
		return -EINVAL;
	if (!c.buf || !access_ok(u64_to_user_ptr(c.buf), len))
		return -EFAULT;
	return cxlt_do_chunk_copy(cd, f, c.chunk, c.owner,
				  u64_to_user_ptr(c.buf));
}

/*
 * Entries one at a time, each as CXLT_BAT_SET with its address; the caller
 * learns how many were set, whatever stops the batch. A page onlined as
 * System RAM is allowed here, unlike for CXLT_BAT_SET by page number: the
 * address names the caller's own page (a VM's memory on a kmem node), and an
 * association changes no data; whoever has the page later, the device drops
 * the association at its first write.
 */
static long cxlt_ioc_bat_set_addrs(struct cxlt_file *f, void __user *argp)
{
	struct cxlt_bat_set_addrs __user *ua = argp;
	struct cxlt_dev *cd = f->cd;
	struct cxlt_bat_addr __user *ue;
	struct cxlt_bat_set_addrs a;
	int ret = 0;
	u32 i;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved0 || !cxlt_rsvd_zero(a.reserved, ARRAY_SIZE(a.reserved)) ||
	    !a.count || a.count > CXLT_BAT_ADDRS_MAX)
		return -EINVAL;
	if (cxlt_need_admin())
		return -EPERM;
	ue = u64_to_user_ptr(a.entries);
	if (!access_ok(ue, array_size(a.count, sizeof(*ue))))
		return -EFAULT;
	for (i = 0; i < a.count; i++) {
		struct cxlt_bat b = { .op = CXLT_BAT_SET, .flags = CXLT_BAT_F_ADDR };
		struct cxlt_bat_addr e;

		if (i && signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (copy_from_user(&e, &ue[i], sizeof(e))) {
			ret = -EFAULT;
			break;
		}
		ret = e.reserved ? -EINVAL : cxlt_user_addr_page(cd, e.addr, &b.page);
		if (ret)
			break;
		b.addr = e.addr;
		b.block = e.block;
		b.disk = e.disk;
		ret = cxlt_do_bat(cd, f, &b, NULL);
		if (ret)
			break;
		cond_resched();
	}
	if (put_user(i, &ua->done))
		return -EFAULT;
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
		struct cxlt_event_scope es;
		struct cxlt_addr_page ap;
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

	case CXLT_IOC_VIEW:
		return cxlt_ioc_view(f, argp);

	case CXLT_IOC_GRANT:
		return cxlt_ioc_grant(f, argp);

	case CXLT_IOC_BAT:
		if (copy_from_user(&u.bat, argp, sizeof(u.bat)))
			return -EFAULT;
		/*
		 * A forged association makes a later discard answer "clean"
		 * for another disk's block: SET is the administrator's, and
		 * CLEAR, which names no mapping; DISCARD only takes one away.
		 */
		if (u.bat.op == CXLT_BAT_DISCARD)
			ret = cxlt_may_discard(f, u.bat.page,
					       u.bat.flags & CXLT_BAT_F_ADDR ?
					       u.bat.addr : 0);
		else if (u.bat.op != CXLT_BAT_GET)
			ret = cxlt_need_admin() ?: cxlt_user_page_ok(cd, u.bat.page);
		else
			ret = 0;
		if (ret)
			return -EPERM;
		ret = cxlt_do_bat(cd, f, &u.bat, NULL);
		if (!ret && copy_to_user(argp, &u.bat, sizeof(u.bat)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_SLOT_ALLOC:
		if (copy_from_user(&u.sa, argp, sizeof(u.sa)))
			return -EFAULT;
		if (!cxlt_rsvd_zero(u.sa.reserved, ARRAY_SIZE(u.sa.reserved)))
			return -EINVAL;
		if (u.sa.flags & CXLT_SLOT_F_KEEP && cxlt_need_admin())
			return -EPERM;
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
		if (u.sm.flags & ~CXLT_SLOT_MERGE_F_ADDR || u.sm.reserved ||
		    (u.sm.flags & CXLT_SLOT_MERGE_F_ADDR) != !!u.sm.addr)
			return -EINVAL;
		/* It writes a whole page: the caller's own, never the kernel's. */
		if (cxlt_may_change_page(f, u.sm.page, u.sm.addr))
			return -EPERM;
		/* Rule 6: the old contents reach the page before the merge... */
		if (u.sm.addr) {
			ret = cxlt_flush_user_page(cd, u.sm.addr);
			if (ret)
				return ret;
		}
		ret = cxlt_do_slot_merge(cd, f, u.sm.slot, u.sm.page, NULL,
					 &u.sm.valid_bytes);
		/*
		 * ... and no cached copy survives it. The merge is done: a
		 * mapping the caller removed meanwhile is its own stale copy.
		 */
		if (!ret && u.sm.addr)
			cxlt_flush_user_page(cd, u.sm.addr);
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
		/* A file releases its own bound chunks without privileges. */
		if (u.ch.op == CXLT_CHUNK_ASSIGN && cxlt_need_admin())
			return -EPERM;
		ret = cxlt_do_chunk(cd, f, &u.ch);
		if (!ret && copy_to_user(argp, &u.ch, sizeof(u.ch)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_CHUNK_LIST:
		return cxlt_ioc_chunk_list(f, argp);

	case CXLT_IOC_CHUNK_COPY:
		return cxlt_ioc_chunk_copy(f, argp);

	case CXLT_IOC_STATS:
		ret = cxlt_read_stats(cd, &u.st);
		if (!ret && copy_to_user(argp, &u.st, sizeof(u.st)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_CTRL:
		if (copy_from_user(&u.ctl, argp, sizeof(u.ctl)))
			return -EFAULT;
		if ((u.ctl.set | u.ctl.clear | u.ctl.flags) && cxlt_need_admin())
			return -EPERM;
		ret = cxlt_set_ctrl(cd, &u.ctl);
		if (!ret && copy_to_user(argp, &u.ctl, sizeof(u.ctl)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_EVENT_SCOPE:
		if (copy_from_user(&u.es, argp, sizeof(u.es)))
			return -EFAULT;
		if (u.es.flags || u.es.scope > CXLT_EVENTS_ALL ||
		    !cxlt_rsvd_zero(u.es.reserved, ARRAY_SIZE(u.es.reserved)))
			return -EINVAL;
		if (u.es.scope == CXLT_EVENTS_ALL && cxlt_need_admin())
			return -EPERM;
		cxlt_evq_set_scope(cd, f, u.es.scope == CXLT_EVENTS_ALL);
		return 0;

	case CXLT_IOC_ADDR_PAGE:
		if (copy_from_user(&u.ap, argp, sizeof(u.ap)))
			return -EFAULT;
		if (u.ap.flags || u.ap.reserved0 ||
		    !cxlt_rsvd_zero(u.ap.reserved, ARRAY_SIZE(u.ap.reserved)))
			return -EINVAL;
		ret = cxlt_user_addr_page(cd, u.ap.addr, &u.ap.page);
		if (!ret && copy_to_user(argp, &u.ap, sizeof(u.ap)))
			ret = -EFAULT;
		return ret;

	case CXLT_IOC_BAT_SET_ADDRS:
		return cxlt_ioc_bat_set_addrs(f, argp);

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
