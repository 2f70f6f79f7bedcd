/*
 * nvml.c — NVIDIA's NVML, loaded at run time: dlopen of libnvidia-ml.so.1
 * (no build dependency, and a machine without the driver still runs
 * thermap), the lookup of its functions by name, nvmlInit/nvmlShutdown
 * and its error strings. What is read through it is its users' business:
 * the samples of `profile --live` (telemetry/nvml.c) and the GPUs and
 * NVLinks of `topo --local` (topo/local.c). It sits in base/ because
 * both use it and neither may include the other's header.
 *
 * Types, constants and prototypes are those of NVIDIA's public nvml.h
 * (NVML 12.2.140, as NVIDIA/go-nvml keeps it in gen/nvml/nvml.h); thermap
 * declares only what it calls (base.h, "nvml.c").
 */
#include <dlfcn.h>
#include <string.h>

#include "base/base.h"

void *tm_nvml_sym(const tm_nvml *N, const char *name, const char *older)
{
	void *p = dlsym(N->lib, name);
	return p || !older ? p : dlsym(N->lib, older);
}

int tm_nvml_open(tm_nvml *N, const char *who, tm_error *err)
{
	const char *what = NULL;
	memset(N, 0, sizeof *N);
	/* nvidia-smi loads the same library, so hiding it from thermap
	 * alone takes thermap's own word */
	if (tm_knob(TM_KNOB_NO_NVML))
		return tm_fail(err, TM_EINPUT, "%sNVML not loaded: "
		               "THERMAP_NO_NVML is set", who);
	if (!(N->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)))
		return tm_fail(err, TM_EINPUT, "%scannot load NVML "
		               "(libnvidia-ml.so.1): %s", who, dlerror());
	/* the _v2 entry points are NVML's since 2014; the names without a
	 * suffix are the older ones with the same arguments */
	*(void **)&N->init = tm_nvml_sym(N, "nvmlInit_v2", "nvmlInit");
	*(void **)&N->shutdown = tm_nvml_sym(N, "nvmlShutdown", NULL);
	*(void **)&N->error_string = tm_nvml_sym(N, "nvmlErrorString", NULL);
	*(void **)&N->count = tm_nvml_sym(N, "nvmlDeviceGetCount_v2",
	                                  "nvmlDeviceGetCount");
	*(void **)&N->handle = tm_nvml_sym(N, "nvmlDeviceGetHandleByIndex_v2",
	                                   "nvmlDeviceGetHandleByIndex");
	if (!N->init) what = "nvmlInit";
	else if (!N->shutdown) what = "nvmlShutdown";
	else if (!N->count) what = "nvmlDeviceGetCount";
	else if (!N->handle) what = "nvmlDeviceGetHandleByIndex";
	if (what)
		return tm_nvml_missing(N, who, what, err);
	return 0;
}

int tm_nvml_missing(tm_nvml *N, const char *who, const char *what,
                    tm_error *err)
{
	tm_nvml_close(N);
	return tm_fail(err, TM_EINPUT, "%sNVML (libnvidia-ml.so.1) has no %s",
	               who, what);
}

int tm_nvml_start(tm_nvml *N, const char *who, tm_error *err)
{
	int e = N->init();
	if (e != 0) {
		int rc = tm_fail(err, TM_EINPUT, "%sNVML does not start: %s", who,
		                 tm_nvml_strerror(N, e));
		tm_nvml_close(N);
		return rc;
	}
	N->started = true;
	return 0;
}

const char *tm_nvml_strerror(const tm_nvml *N, int rc)
{
	const char *s = N->error_string ? N->error_string(rc) : NULL;
	return s ? s : "error";
}

void tm_nvml_close(tm_nvml *N)
{
	if (!N->lib)
		return;
	if (N->started)
		N->shutdown();
	dlclose(N->lib);
	memset(N, 0, sizeof *N);
}
