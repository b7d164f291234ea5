/* nvml_energy.c - NVML loaded with dlopen: the device handle and its total-energy counter. */
#include "arm/meters/nvml_energy.h"

#include "arm/meters/nvml_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct kt_nvml_energy {
    void *lib;
    kt_nvml_shutdown_fn shutdown;
    kt_nvml_error_string_fn error_string;
    kt_nvml_energy_fn energy;
    kt_nvml_device device;
};

static const char *nvml_text(const kt_nvml_energy *e, kt_nvml_return rc)
{
    const char *s = e->error_string ? e->error_string(rc) : NULL;
    return s ? s : "unknown NVML error";
}

int kt_nvml_energy_open(kt_nvml_energy **out, const char *pci_bus_id, char *why, size_t why_size)
{
    *out = NULL;
    kt_nvml_energy *e = calloc(1, sizeof(*e));
    if (!e) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    int inited = 0, rc = -1;
    e->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!e->lib) {
        snprintf(why, why_size, "no NVML: %s", dlerror());
        goto done;
    }
    kt_nvml_init_fn init = (kt_nvml_init_fn)dlsym(e->lib, "nvmlInit_v2");
    kt_nvml_by_pci_fn by_pci = (kt_nvml_by_pci_fn)dlsym(e->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    kt_nvml_by_index_fn by_index =
        (kt_nvml_by_index_fn)dlsym(e->lib, "nvmlDeviceGetHandleByIndex_v2");
    e->shutdown = (kt_nvml_shutdown_fn)dlsym(e->lib, "nvmlShutdown");
    e->error_string = (kt_nvml_error_string_fn)dlsym(e->lib, "nvmlErrorString");
    e->energy = (kt_nvml_energy_fn)dlsym(e->lib, "nvmlDeviceGetTotalEnergyConsumption");
    if (!init || !by_pci || !by_index || !e->shutdown || !e->energy) {
        snprintf(why, why_size, "libnvidia-ml.so.1 lacks an entry point ktrial needs");
        goto done;
    }
    kt_nvml_return r = init();
    if (r != KT_NVML_SUCCESS) {
        snprintf(why, why_size, "nvmlInit: %s", nvml_text(e, r));
        goto done;
    }
    inited = 1;
    r = pci_bus_id && pci_bus_id[0] ? by_pci(pci_bus_id, &e->device) : by_index(0, &e->device);
    if (r != KT_NVML_SUCCESS) {
        snprintf(why, why_size, "NVML has no device '%s': %s",
                 pci_bus_id && pci_bus_id[0] ? pci_bus_id : "0", nvml_text(e, r));
        goto done;
    }
    unsigned long long mj;
    if ((r = e->energy(e->device, &mj)) != KT_NVML_SUCCESS) {
        snprintf(why, why_size, "nvmlDeviceGetTotalEnergyConsumption: %s", nvml_text(e, r));
        goto done;
    }
    *out = e;
    rc = 0;
done:
    if (rc < 0) {
        if (inited)
            e->shutdown();
        if (e->lib)
            dlclose(e->lib);
        free(e);
    }
    return rc;
}

int kt_nvml_energy_read(double *joules, kt_nvml_energy *e, char *why, size_t why_size)
{
    unsigned long long mj;
    kt_nvml_return r = e->energy(e->device, &mj);
    if (r != KT_NVML_SUCCESS) {
        snprintf(why, why_size, "nvmlDeviceGetTotalEnergyConsumption: %s", nvml_text(e, r));
        return -1;
    }
    *joules = (double)mj * 1e-3;
    return 0;
}

void kt_nvml_energy_close(kt_nvml_energy *e)
{
    if (!e)
        return;
    e->shutdown();
    dlclose(e->lib);
    free(e);
}
