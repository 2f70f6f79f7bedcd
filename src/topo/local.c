/*
 * local.c — the live machine as a topology source (`thermap topo
 * --local`): hwloc's view of this machine (hwloc.c), and, when nvidia-smi
 * runs here, its `topo -m` matrix and its GPU list (smi.c), each read from
 * a temporary file. A reader built of readers: it calls them and view.c,
 * never topo.c.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo.h"

/* Runs cmd, keeping its standard output in a temporary file whose name
 * goes to path; false when it could not run or failed. */
static bool run_to_file(const char *cmd, char path[64])
{
	char buf[8192];
	FILE *p, *f;
	int fd, st;
	size_t n;
	snprintf(path, 64, "/tmp/thermap-topo-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return false;
	f = fdopen(fd, "w");
	p = popen(cmd, "r");
	if (!f || !p) {
		if (p)
			pclose(p);
		if (f)
			fclose(f);
		unlink(path);
		return false;
	}
	while ((n = fread(buf, 1, sizeof buf, p)) > 0)
		fwrite(buf, 1, n, f);
	st = pclose(p);
	fclose(f);
	if (st != 0) {
		unlink(path);
		return false;
	}
	return true;
}

/* hwloc live, and nvidia-smi when it runs here. */
int tp_read_local(tp_view **views, int *nv, tm_error *err)
{
	tp_view hw, smi, list;
	char path[64];
	int rc;

	if ((rc = tp_read_hwloc(NULL, &hw, err)))
		return rc;
	if ((rc = tp_check_view(&hw, err))) {
		tp_view_clear(&hw);
		return rc;
	}
	tp_mark_nv_unknown(&hw);
	if (run_to_file("nvidia-smi topo -m 2>/dev/null", path)) {
		rc = tp_read_smi_topo(path, &smi, err);
		unlink(path);
		if (!rc && (rc = tp_check_view(&smi, err)))
			tp_view_clear(&smi);
		if (rc) {
			tp_view_clear(&hw);
			return rc;
		}
		smi.source = "local";
		free(smi.file);
		smi.file = xstrdup("nvidia-smi topo -m");
		if (run_to_file("nvidia-smi --query-gpu=index,uuid,pci.bus_id,"
		                "name,memory.total --format=csv 2>/dev/null",
		                path)) {
			rc = tp_read_gpu_list(path, &list, err);
			unlink(path);
			if (!rc && (rc = tp_check_view(&list, err)))
				tp_view_clear(&list);
			if (rc) {
				tp_view_clear(&hw);
				tp_view_clear(&smi);
				return rc;
			}
			list.source = "local";
			free(list.file);
			list.file = xstrdup("nvidia-smi --query-gpu");
			*views = xrealloc(*views, (size_t)(*nv + 1) * sizeof **views);
			(*views)[(*nv)++] = list;
		}
		*views = xrealloc(*views, (size_t)(*nv + 1) * sizeof **views);
		(*views)[(*nv)++] = smi;
	} else {
		tp_note(&hw, "nvidia-smi did not run here: link codes other "
		        "than NVLink come from the PCI tree, and GPU UUIDs are "
		        "known only where hwloc's NVML backend reports them");
	}
	*views = xrealloc(*views, (size_t)(*nv + 1) * sizeof **views);
	(*views)[(*nv)++] = hw;
	return 0;
}
