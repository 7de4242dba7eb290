// SPDX-License-Identifier: GPL-2.0
/*
 * The PCIe-attached flavour of the memory (docs/spec.md section 10): a board
 * without CXL (the Alveo build, fpga/) presents function 0 as a plain PCIe
 * memory function whose BAR0 is the memory window, BAR offset = DPA, instead
 * of a CXL memory device behind an HDM decoder. No driver binds that
 * function, so the tracker turns its memory decoding on while paired with
 * it. User space maps the window through the PCI core's sysfs resource
 * files of function 0 (resource0_wc: write-combining, resource0: uncached),
 * found from /sys/class/cxltrack/cxltrackN/memdev; kernel users map
 * pci_resource_start(memdev, 0) + DPA. The window is never claimed here:
 * with CONFIG_IO_STRICT_DEVMEM a claimed region cannot be mapped that way.
 */
#include <linux/pci.h>

#include "cxltrack_core.h"

#define CXLT_BARWIN_BAR 0

/**
 * cxlt_barwin_is() - whether function 0 is the PCIe-attached memory window
 * @mem: function 0 of the tracker's slot
 *
 * Return: true for the cxltrack memory function (class 05.00, the register
 * map's CXLT_PCI_MEM_DEVICE_ID).
 */
bool cxlt_barwin_is(struct pci_dev *mem)
{
	return mem->vendor == CXLT_PCI_VENDOR_ID &&
	       mem->device == CXLT_PCI_MEM_DEVICE_ID &&
	       (mem->class >> 8) == PCI_CLASS_MEMORY_RAM;
}

/**
 * cxlt_barwin_enable() - check the window and turn its decoding on
 * @cd: tracker whose memdev is the PCIe-attached memory function
 *
 * The window must be a 64-bit memory BAR covering the capacity the tracker
 * reports in CAP_PAGES (read before this is called).
 *
 * Return: 0, -ENODEV for a window that does not fit, or the error of
 * pci_enable_device_mem().
 */
int cxlt_barwin_enable(struct cxlt_dev *cd)
{
	struct pci_dev *mem = cd->memdev;
	unsigned long flags = pci_resource_flags(mem, CXLT_BARWIN_BAR);
	u64 need = cd->caps.pages << cd->caps.page_shift;
	int ret;

	if (!(flags & IORESOURCE_MEM) || !(flags & IORESOURCE_MEM_64) ||
	    pci_resource_len(mem, CXLT_BARWIN_BAR) < need) {
		pci_err(cd->pdev, "function 0 (%s): BAR%d is not a 64-bit memory window of %llu bytes\n",
			pci_name(mem), CXLT_BARWIN_BAR, need);
		return -ENODEV;
	}
	ret = pci_enable_device_mem(mem);
	if (ret)
		return ret;
	cd->barwin = true;
	pci_info(cd->pdev, "memory window: PCIe BAR%d of %s at %pR, DPA = offset (no CXL decoder)\n",
		 CXLT_BARWIN_BAR, pci_name(mem), &mem->resource[CXLT_BARWIN_BAR]);
	return 0;
}

/**
 * cxlt_barwin_disable() - undo cxlt_barwin_enable() (nothing if not enabled)
 * @cd: tracker
 */
void cxlt_barwin_disable(struct cxlt_dev *cd)
{
	if (cd->barwin)
		pci_disable_device(cd->memdev);
	cd->barwin = false;
}
