// SPDX-License-Identifier: GPL-2.0
/*
 * cxltrack: driver for the tracking engine of a CXL type-3 memory expander
 * (docs/spec.md). The tracker is PCI function 1 of the memory device; it is
 * paired with function 0 (class 05.02, bound to the unmodified cxl_pci)
 * of the same bus/device number, or, on a board without CXL, with the
 * PCIe memory window of cxltrack_barwin.c.
 *
 * Probe checks ID.MAGIC and VERSION.MAJOR, reads the configuration from
 * CAP_* (never assumes the default), validates it against the spec's
 * legal ranges, sets up MSI-X vector 0, a DMA buffer for harvests where the
 * device has CAP_DMA (spec 5.3), and creates /dev/cxltrackN.
 *
 * The driver uses x86 cache maintenance (clflush_cache_range(),
 * wbinvd_on_all_cpus()) for the CPU-cache contract of spec section 9.
 */
#include <linux/bitmap.h>
#include <linux/dma-mapping.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "cxltrack_core.h"

#define CXLT_MAX_DEVS	64

unsigned int cxlt_cmd_timeout_ms = 1000;
module_param_named(cmd_timeout_ms, cxlt_cmd_timeout_ms, uint, 0644);
MODULE_PARM_DESC(cmd_timeout_ms, "command completion timeout in ms (default 1000)");

bool cxlt_allow_raw;
module_param_named(allow_raw, cxlt_allow_raw, bool, 0644);
MODULE_PARM_DESC(allow_raw, "allow raw register access for tests (CXLT_IOC_RAW, CAP_SYS_RAWIO)");

unsigned int cxlt_tenant_slots = 2;
module_param_named(tenant_slots, cxlt_tenant_slots, uint, 0644);
MODULE_PARM_DESC(tenant_slots, "OPEN slots a file without CAP_SYS_ADMIN may hold (default 2)");

bool cxlt_harvest_dma = true;
module_param_named(harvest_dma, cxlt_harvest_dma, bool, 0644);
MODULE_PARM_DESC(harvest_dma, "harvest by DMA where the device can (CAP_DMA); 0: RESULT window only (default 1)");

/*
 * A DMA command costs about what a RESULT-window command costs in uncached
 * loads (CMD_STATUS polls, RESULT0/1) plus a copy from cached memory; the
 * window path adds one uncached 8-byte load per 64 pages on top. From 16 of
 * them (1024 pages, a 4 MiB KVM memslot) on, DMA is clearly cheaper.
 */
bool cxlt_harvest_list = true;
module_param_named(harvest_list, cxlt_harvest_list, bool, 0644);
MODULE_PARM_DESC(harvest_list, "dirty/accessed DMA harvests fetch only the non-zero words (CAP_DMA.LIST); 0: the whole bitmap (default 1)");

unsigned int cxlt_dma_min_bytes = 128;
module_param_named(dma_min_bytes, cxlt_dma_min_bytes, uint, 0644);
MODULE_PARM_DESC(dma_min_bytes, "harvests with a smaller output read the RESULT window (default 128)");

static dev_t cxlt_devt;
static DEFINE_IDA(cxlt_ida);
static LIST_HEAD(cxlt_devices);
static DEFINE_MUTEX(cxlt_devices_lock);

static const struct class cxlt_class = {
	.name = CXLT_NAME,
};

static void cxlt_dev_release(struct device *dev)
{
	struct cxlt_dev *cd = container_of(dev, struct cxlt_dev, dev);

	cxlt_klog_free(cd);
	mutex_destroy(&cd->view_lock);
	bitmap_free(cd->unscrubbed);
	kvfree(cd->chunk_bind);
	pci_dev_put(cd->memdev);
	pci_dev_put(cd->pdev);
	if (cd->id >= 0)
		ida_free(&cxlt_ida, cd->id);
	kfree(cd);
}

#define CAPF(v, reg, f) (((v) & CXLT_##reg##_##f##_MASK) >> CXLT_##reg##_##f##_SHIFT)

static bool cxlt_in_range(u64 v, u64 min, u64 max)
{
	return v >= min && v <= max;
}

/* v within the register map's legal range of configuration field F */
#define CXLT_IN_RANGE(v, F) cxlt_in_range(v, CXLT_CFG_##F##_MIN, CXLT_CFG_##F##_MAX)

static int cxlt_read_caps(struct cxlt_dev *cd)
{
	struct cxlt_caps *c = &cd->caps;
	struct device *dev = &cd->pdev->dev;
	u32 id, geom, chunk, bat;

	id = cxlt_rd(cd, CXLT_ID);
	if (id != CXLT_ID_RESET) {
		dev_err(dev, "ID reads %#x, not the cxltrack magic %#x\n", id, CXLT_ID_RESET);
		return -ENODEV;
	}
	c->hw_version = cxlt_rd(cd, CXLT_VERSION);
	if (CAPF(c->hw_version, VERSION, MAJOR) !=
	    CAPF(CXLT_VERSION_RESET, VERSION, MAJOR)) {
		dev_err(dev, "interface version %u.%u not supported (driver: %u.x)\n",
			CAPF(c->hw_version, VERSION, MAJOR), CAPF(c->hw_version, VERSION, MINOR),
			CAPF(CXLT_VERSION_RESET, VERSION, MAJOR));
		return -ENODEV;
	}
	c->pages = cxlt_rd64(cd, CXLT_CAP_PAGES_LO);
	geom = cxlt_rd(cd, CXLT_CAP_GEOM);
	chunk = cxlt_rd(cd, CXLT_CAP_CHUNK);
	bat = cxlt_rd(cd, CXLT_CAP_BAT);
	c->page_shift = CAPF(geom, CAP_GEOM, PAGE_SHIFT);
	c->num_slots = CAPF(geom, CAP_GEOM, NUM_SLOTS);
	c->hot_bits = CAPF(geom, CAP_GEOM, HOT_BITS);
	c->evq_depth_log2 = CAPF(geom, CAP_GEOM, EVQ_DEPTH_LOG2);
	c->chunk_shift = CAPF(chunk, CAP_CHUNK, CHUNK_SHIFT);
	c->num_chunks = CAPF(chunk, CAP_CHUNK, NUM_CHUNKS);
	c->disk_bits = CAPF(bat, CAP_BAT, DISK_BITS);
	c->block_bits = CAPF(bat, CAP_BAT, BLOCK_BITS);
	c->tick_ns = cxlt_rd(cd, CXLT_CAP_TICK);

	/*
	 * The legal ranges of spec section 1.1 (the register map's
	 * CXLT_CFG_*_MIN/MAX): anything else is not trusted.
	 */
	if (!CXLT_IN_RANGE(c->page_shift, PAGE_SHIFT) ||
	    !CXLT_IN_RANGE(c->num_slots, SLOTS) ||
	    !CXLT_IN_RANGE(c->hot_bits, HOT_BITS) ||
	    !CXLT_IN_RANGE(c->evq_depth_log2, EVQ_DEPTH_LOG2) ||
	    !CXLT_IN_RANGE(c->chunk_shift, CHUNK_SHIFT) ||
	    c->chunk_shift < c->page_shift ||
	    !c->num_chunks || c->num_chunks > CXLT_MAX_CHUNKS ||
	    !CXLT_IN_RANGE(c->disk_bits, BAT_DISK_BITS) ||
	    !CXLT_IN_RANGE(c->block_bits, BAT_BLOCK_BITS) ||
	    !CXLT_IN_RANGE(c->tick_ns, TICK_NS) ||
	    !c->pages || c->pages % CXLT_HARVEST_ALIGN_PAGES ||
	    c->pages > (CXLT_CFG_CAPACITY_BYTES_MAX >> c->page_shift) ||
	    (c->pages << c->page_shift) != (u64)c->num_chunks << c->chunk_shift) {
		dev_err(dev, "impossible configuration: pages %llu geom %#x chunk %#x bat %#x tick %u\n",
			c->pages, geom, chunk, bat, c->tick_ns);
		return -ENODEV;
	}
	return 0;
}

/* Largest DMA buffer: a 128 GiB device's bitmap, 4M pages of hotness. */
#define CXLT_DMA_BUF_MAX	SZ_4M

/* The largest chunk CXLT_IOC_CHUNK_COPY takes: its buffer is one chunk. */
#define CXLT_COPY_BUF_MAX	SZ_8M

/*
 * A buffer of one chunk for CHUNK_COPY (spec 7.1) where the device has the
 * copy engine; without it (or the memory) the ioctl answers -EOPNOTSUPP and
 * the caller reads the chunk through the memory window as before.
 */
static void cxlt_copy_setup(struct cxlt_dev *cd, u32 cap)
{
	struct device *dev = &cd->pdev->dev;
	size_t len = (size_t)1 << cd->caps.chunk_shift;

	if (!CAPF(cap, CAP_DMA, COPY))
		return;
	if (len > CXLT_COPY_BUF_MAX) {
		dev_info(dev, "chunks of %zu bytes: no CHUNK_COPY buffer\n", len);
		return;
	}
	cd->copy_buf = dmam_alloc_coherent(dev, len, &cd->copy_addr,
					   GFP_KERNEL | __GFP_NOWARN);
	if (!cd->copy_buf)
		dev_warn(dev, "no CHUNK_COPY buffer of %zu bytes\n", len);
}

/**
 * cxlt_dma_setup() - set up DMA harvests if the device offers them
 * @cd: tracker, caps read
 *
 * The buffer holds the whole device's hotness (the largest result) up to
 * CXLT_DMA_BUF_MAX, or less if memory is short; bigger ranges take several
 * commands. Without CAP_DMA, a DMA mask or any buffer, harvests read the
 * RESULT window as before: DMA is an optimisation, never a requirement.
 */
static void cxlt_dma_setup(struct cxlt_dev *cd)
{
	struct device *dev = &cd->pdev->dev;
	u32 cap = cxlt_rd(cd, CXLT_CAP_DMA);
	u32 bits = CAPF(cap, CAP_DMA, ADDR_BITS);
	size_t len;

	if (!CAPF(cap, CAP_DMA, PRESENT))
		return;
	/* Below 32 bits the device could not reach ordinary buffers reliably. */
	if (bits < 32 || bits > 64) {
		dev_warn(dev, "CAP_DMA %#x: unusable address width, harvests use MMIO\n", cap);
		return;
	}
	if (dma_set_mask_and_coherent(dev, DMA_BIT_MASK(bits))) {
		dev_warn(dev, "no %u-bit DMA mask, harvests use MMIO\n", bits);
		return;
	}
	cxlt_copy_setup(cd, cap);
	len = PAGE_ALIGN(min_t(u64, cd->caps.pages, CXLT_DMA_BUF_MAX));
	for (;;) {
		cd->dma_buf = dmam_alloc_coherent(dev, len, &cd->dma_addr,
						  GFP_KERNEL | __GFP_NOWARN);
		if (cd->dma_buf || len == PAGE_SIZE)
			break;
		len = PAGE_ALIGN(len / 2);
	}
	if (!cd->dma_buf) {
		dev_warn(dev, "no DMA buffer, harvests use MMIO\n");
		return;
	}
	cd->dma_len = len;
	cd->dma_bits = bits;
	cd->dma_list = CAPF(cap, CAP_DMA, LIST);
}

static struct pci_dev *cxlt_find_memdev(struct pci_dev *pdev)
{
	struct pci_dev *mem;

	mem = pci_get_slot(pdev->bus, PCI_DEVFN(PCI_SLOT(pdev->devfn), 0));
	if (!mem) {
		dev_err(&pdev->dev, "no function 0 in this slot\n");
		return NULL;
	}
	if ((mem->class >> 8) != PCI_CLASS_MEMORY_CXL && !cxlt_barwin_is(mem)) {
		dev_err(&pdev->dev, "function 0 (%s) has class %06x, neither a CXL memory device nor a PCIe memory window\n",
			pci_name(mem), mem->class);
		pci_dev_put(mem);
		return NULL;
	}
	return mem;
}

static int cxlt_probe(struct pci_dev *pdev, const struct pci_device_id *ent)
{
	struct cxlt_dev *cd;
	int ret;

	cd = kzalloc(sizeof(*cd), GFP_KERNEL);
	if (!cd)
		return -ENOMEM;
	cd->id = -1;
	cd->irq = -1;
	init_rwsem(&cd->life);
	mutex_init(&cd->cmd_lock);
	mutex_init(&cd->copy_lock);
	mutex_init(&cd->evq_mutex);
	spin_lock_init(&cd->evq_lock);
	INIT_LIST_HEAD(&cd->files);
	cxlt_views_init(cd);
	init_waitqueue_head(&cd->wq);
	BLOCKING_INIT_NOTIFIER_HEAD(&cd->notifier);
	device_initialize(&cd->dev);
	cd->dev.release = cxlt_dev_release;
	cd->dev.class = &cxlt_class;
	cd->dev.parent = &pdev->dev;
	cd->dev.groups = cxlt_groups;
	cd->pdev = pci_dev_get(pdev);

	ret = ida_alloc_max(&cxlt_ida, CXLT_MAX_DEVS - 1, GFP_KERNEL);
	if (ret < 0)
		goto err_put;
	cd->id = ret;
	cd->dev.devt = MKDEV(MAJOR(cxlt_devt), cd->id);
	ret = dev_set_name(&cd->dev, CXLT_NAME "%d", cd->id);
	if (ret)
		goto err_put;

	cd->memdev = cxlt_find_memdev(pdev);
	if (!cd->memdev) {
		ret = -ENODEV;
		goto err_put;
	}
	ret = pcim_enable_device(pdev);
	if (ret)
		goto err_put;
	if (pci_resource_len(pdev, CXLT_BAR) < CXLT_BAR_SIZE ||
	    !(pci_resource_flags(pdev, CXLT_BAR) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "BAR%d is not a %#x-byte memory BAR\n",
			CXLT_BAR, CXLT_BAR_SIZE);
		ret = -ENODEV;
		goto err_put;
	}
	/* pci_iomap: an uncached mapping, as slot windows need (spec 9.4). */
	cd->regs = pcim_iomap_region(pdev, CXLT_BAR, CXLT_NAME);
	if (IS_ERR(cd->regs)) {
		ret = PTR_ERR(cd->regs);
		cd->regs = NULL;
		goto err_put;
	}
	pci_set_master(pdev);

	ret = cxlt_read_caps(cd);
	if (ret)
		goto err_put;
	cxlt_dma_setup(cd);
	/* The device may have been reset before we were bound. */
	cd->unscrubbed = bitmap_zalloc(cd->caps.num_chunks, GFP_KERNEL);
	if (!cd->unscrubbed) {
		ret = -ENOMEM;
		goto err_put;
	}
	bitmap_fill(cd->unscrubbed, cd->caps.num_chunks);
	cd->chunk_bind = kvcalloc(cd->caps.num_chunks, sizeof(*cd->chunk_bind),
				  GFP_KERNEL);
	if (!cd->chunk_bind) {
		ret = -ENOMEM;
		goto err_put;
	}
	if (cxlt_barwin_is(cd->memdev)) {
		ret = cxlt_barwin_enable(cd);
		if (ret)
			goto err_put;
	}
	cd->ctrl = cxlt_rd(cd, CXLT_CTRL) &
		   (CXLT_CTRL_TRACK_EN_MASK | CXLT_CTRL_BAT_INV_EVT_EN_MASK);
	cd->slot_timeout = cxlt_rd(cd, CXLT_SLOT_TIMEOUT);

	ret = cxlt_irq_setup(cd);
	if (ret)
		goto err_put;

	cdev_init(&cd->cdev, &cxlt_fops);
	cd->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&cd->cdev, &cd->dev);
	if (ret)
		goto err_irq;

	pci_set_drvdata(pdev, cd);
	mutex_lock(&cxlt_devices_lock);
	list_add_tail(&cd->node, &cxlt_devices);
	mutex_unlock(&cxlt_devices_lock);

	dev_info(&pdev->dev,
		 "%s: v%u.%u, %llu pages of %u KiB, %u slots, %u chunks of %u KiB, memdev %s\n",
		 dev_name(&cd->dev), cd->caps.hw_version >> 16,
		 cd->caps.hw_version & 0xffff, cd->caps.pages,
		 1U << (cd->caps.page_shift - 10), cd->caps.num_slots,
		 cd->caps.num_chunks, 1U << (cd->caps.chunk_shift - 10),
		 pci_name(cd->memdev));
	return 0;

err_irq:
	cxlt_irq_teardown(cd);
err_put:
	cxlt_barwin_disable(cd);
	cd->dead = true;
	put_device(&cd->dev);
	return ret;
}

static void cxlt_remove(struct pci_dev *pdev)
{
	struct cxlt_dev *cd = pci_get_drvdata(pdev);

	mutex_lock(&cxlt_devices_lock);
	list_del(&cd->node);
	mutex_unlock(&cxlt_devices_lock);

	/* No new opens, sysfs callbacks drained (they take life themselves). */
	cdev_device_del(&cd->cdev, &cd->dev);

	/* Wait for every device access in flight, then refuse new ones. */
	down_write(&cd->life);
	cd->dead = true;
	up_write(&cd->life);
	wake_up_interruptible_all(&cd->wq);

	/* The IRQ thread is done when free_irq() returns; the BAR goes after. */
	cxlt_irq_teardown(cd);
	cxlt_barwin_disable(cd);
	dev_info(&pdev->dev, "%s removed\n", dev_name(&cd->dev));
	put_device(&cd->dev);
}

/*
 * Stop every device access and the interrupt: remove-like quiescing for a
 * reset or a system suspend. life is held for writing until cxlt_unquiesce(),
 * so no command or sysfs read runs meanwhile; the IRQ thread is waited for
 * (disable_irq()) after INT_ENABLE is cleared, so it cannot touch the device
 * while it is reset or powered down.
 */
static void cxlt_quiesce(struct cxlt_dev *cd)
{
	down_write(&cd->life);
	mutex_lock(&cd->evq_mutex);
	if (!cd->raw_owner && !cd->dead)
		cxlt_int_enable(cd, false);
	mutex_unlock(&cd->evq_mutex);
	if (cd->irq >= 0)
		disable_irq(cd->irq);
}

/*
 * The device is back. @lost: it lost its state (a reset; or after resume,
 * evidence of one). The IRQ is enabled again after the registers are
 * restored, and any event that arrived meanwhile is drained.
 */
static void cxlt_unquiesce(struct cxlt_dev *cd, bool lost)
{
	mutex_lock(&cd->cmd_lock);
	mutex_lock(&cd->evq_mutex);
	if (cd->raw_owner) {
		/* Raw mode: leave every register at its reset value. */
		if (lost)
			cxlt_state_lost(cd);
	} else if (!cd->dead) {
		cxlt_resync(cd, lost);
		cxlt_evq_drain(cd);
	}
	mutex_unlock(&cd->evq_mutex);
	mutex_unlock(&cd->cmd_lock);
	if (cd->irq >= 0)
		enable_irq(cd->irq);
	up_write(&cd->life);
}

/*
 * PCI function reset (sysfs "reset", FLR, CXLT_RAW_RESET): the device loses
 * all of its state (spec section 11).
 */
static void cxlt_reset_prepare(struct pci_dev *pdev)
{
	struct cxlt_dev *cd = pci_get_drvdata(pdev);

	cxlt_quiesce(cd);
	cxlt_bits_lost(cd);	/* the reset clears the dirty bitmap */
}

static void cxlt_reset_done(struct pci_dev *pdev)
{
	struct cxlt_dev *cd = pci_get_drvdata(pdev);

	if (cxlt_rd(cd, CXLT_ID) != CXLT_ID_RESET)
		dev_err(&pdev->dev, "ID wrong after reset; device unusable\n");
	cxlt_unquiesce(cd, true);
}

/*
 * System sleep: the device may lose power (and with it every register and
 * table) or keep it. Suspend quiesces like a reset; resume restores CTRL,
 * SLOT_TIMEOUT and INT_ENABLE, and treats the device as reset if it shows
 * it was: CMD_STATUS.SEQ back at 0 after commands, or CTRL not what the
 * driver wrote.
 */
/*
 * Suspend and resume may run in different tasks (asynchronous suspend), so
 * unlike a reset no lock is held from one to the other: suspend quiesces,
 * marks the device suspended and lets @life go; until resume clears the
 * mark, every caller that would touch the device waits in cxlt_life_get().
 */
static int cxlt_suspend(struct device *dev)
{
	struct cxlt_dev *cd = dev_get_drvdata(dev);

	cxlt_quiesce(cd);
	cd->suspended = true;
	up_write(&cd->life);
	return 0;
}

static int cxlt_resume(struct device *dev)
{
	struct cxlt_dev *cd = dev_get_drvdata(dev);
	u32 st, ctrl;
	bool lost;

	down_write(&cd->life);
	cd->suspended = false;
	st = cxlt_rd(cd, CXLT_CMD_STATUS);
	ctrl = cxlt_rd(cd, CXLT_CTRL) &
	       (CXLT_CTRL_TRACK_EN_MASK | CXLT_CTRL_BAT_INV_EVT_EN_MASK);
	lost = st == ~0U || ctrl != cd->ctrl ||
	       (cd->cmd_seq_valid && cd->cmd_seq &&
		!((st & CXLT_CMD_STATUS_SEQ_MASK) >> CXLT_CMD_STATUS_SEQ_SHIFT));
	if (lost) {
		dev_info(dev, "device state lost over suspend\n");
		cxlt_bits_lost(cd);
	}
	cxlt_unquiesce(cd, lost);
	wake_up_all(&cd->wq);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(cxlt_pm_ops, cxlt_suspend, cxlt_resume);

static const struct pci_error_handlers cxlt_err_handlers = {
	.reset_prepare = cxlt_reset_prepare,
	.reset_done = cxlt_reset_done,
};

static const struct pci_device_id cxlt_ids[] = {
	{ PCI_DEVICE(CXLT_PCI_VENDOR_ID, CXLT_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, cxlt_ids);

static struct pci_driver cxlt_pci_driver = {
	.name = CXLT_NAME,
	.id_table = cxlt_ids,
	.probe = cxlt_probe,
	.remove = cxlt_remove,
	.err_handler = &cxlt_err_handlers,
	.driver.pm = pm_sleep_ptr(&cxlt_pm_ops),
};

struct cxlt_dev *cxlt_get_by_memdev(struct pci_dev *memdev)
{
	struct cxlt_dev *cd, *found = NULL;

	mutex_lock(&cxlt_devices_lock);
	list_for_each_entry(cd, &cxlt_devices, node) {
		if (cd->memdev == memdev) {
			found = cd;
			cxlt_dev_get(cd);
			break;
		}
	}
	mutex_unlock(&cxlt_devices_lock);
	return found;
}
EXPORT_SYMBOL_GPL(cxlt_get_by_memdev);

struct cxlt_dev *cxlt_get_by_id(int id)
{
	struct cxlt_dev *cd, *found = NULL;

	mutex_lock(&cxlt_devices_lock);
	list_for_each_entry(cd, &cxlt_devices, node) {
		if (cd->id == id) {
			found = cd;
			cxlt_dev_get(cd);
			break;
		}
	}
	mutex_unlock(&cxlt_devices_lock);
	return found;
}
EXPORT_SYMBOL_GPL(cxlt_get_by_id);

void cxlt_put(struct cxlt_dev *cd)
{
	if (cd)
		cxlt_dev_put(cd);
}
EXPORT_SYMBOL_GPL(cxlt_put);

int cxlt_info(struct cxlt_dev *cd, struct cxlt_info *info)
{
	if (READ_ONCE(cd->dead))
		return -ENODEV;
	cxlt_fill_info(cd, info);
	return 0;
}
EXPORT_SYMBOL_GPL(cxlt_info);

/* The uapi mirrors device encodings; keep them from drifting apart. */
static_assert(CXLT_EV_SLOT_FULL == CXLT_EVENT_SLOT_FULL);
static_assert(CXLT_EV_SLOT_TIMEOUT == CXLT_EVENT_SLOT_TIMEOUT);
static_assert(CXLT_EV_MERGE_DONE == CXLT_EVENT_MERGE_DONE);
static_assert(CXLT_EV_SCRUB_DONE == CXLT_EVENT_SCRUB_DONE);
static_assert(CXLT_EV_BAT_INVALIDATED == CXLT_EVENT_BAT_INVALIDATED);
static_assert(CXLT_EV_ERROR == CXLT_EVENT_ERROR);
static_assert(CXLT_SLOTST_OPEN == CXLT_SLOT_STATE_OPEN);
static_assert(CXLT_SLOTST_MERGING == CXLT_SLOT_STATE_MERGING);
static_assert(CXLT_CHUNKST_OWNED == CXLT_CHUNK_STATE_OWNED);
static_assert(CXLT_CHUNKST_SCRUBBING == CXLT_CHUNK_STATE_SCRUBBING);
static_assert(CXLT_SLOT_BYTES == CXLT_SLOT_SIZE);

static int __init cxlt_init(void)
{
	int ret;

	cxlt_sysfs_init();
	ret = alloc_chrdev_region(&cxlt_devt, 0, CXLT_MAX_DEVS, CXLT_NAME);
	if (ret)
		return ret;
	ret = class_register(&cxlt_class);
	if (ret)
		goto err_chrdev;
	ret = pci_register_driver(&cxlt_pci_driver);
	if (ret)
		goto err_class;
	return 0;

err_class:
	class_unregister(&cxlt_class);
err_chrdev:
	unregister_chrdev_region(cxlt_devt, CXLT_MAX_DEVS);
	return ret;
}

static void __exit cxlt_exit(void)
{
	pci_unregister_driver(&cxlt_pci_driver);
	class_unregister(&cxlt_class);
	unregister_chrdev_region(cxlt_devt, CXLT_MAX_DEVS);
	ida_destroy(&cxlt_ida);
}

module_init(cxlt_init);
module_exit(cxlt_exit);

MODULE_DESCRIPTION("cxltrack CXL memory tracker driver");
MODULE_LICENSE("GPL");
