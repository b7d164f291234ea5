/* nvml_energy.h - GPU energy from NVML's total-energy counter, with libnvidia-ml opened at run
 * time, so that a build on a machine without the driver works and says why there is no figure. */
#ifndef KT_NVML_ENERGY_H
#define KT_NVML_ENERGY_H

#include <stddef.h>

typedef struct kt_nvml_energy kt_nvml_energy;

/* Opens NVML and the device with PCI bus id 'pci_bus_id' (index 0 when NULL or ""). Returns 0,
 * or a negative code with the reason in 'why' ("libnvidia-ml.so.1: cannot open shared object
 * file"), *out then NULL. */
int kt_nvml_energy_open(kt_nvml_energy **out, const char *pci_bus_id, char *why, size_t why_size);
/* The device's energy counter in joules; 0, or negative with the reason in 'why'. */
int kt_nvml_energy_read(double *joules, kt_nvml_energy *e, char *why, size_t why_size);
void kt_nvml_energy_close(kt_nvml_energy *e);

#endif
