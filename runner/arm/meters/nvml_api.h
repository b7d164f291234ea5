/* nvml_api.h - the few NVML prototypes ktrial uses, declared here because the CUDA toolkit on
 * the build machines ships no nvml.h. Signatures and values as in NVIDIA's nvml.h (NVML API
 * version 2 entry points); the library is opened at run time (nvml_energy.c). */
#ifndef KT_NVML_API_H
#define KT_NVML_API_H

typedef int kt_nvml_return; /* nvmlReturn_t; 0 is NVML_SUCCESS */
typedef struct kt_nvml_device_st *kt_nvml_device;

#define KT_NVML_SUCCESS 0

typedef kt_nvml_return (*kt_nvml_init_fn)(void);     /* nvmlInit_v2 */
typedef kt_nvml_return (*kt_nvml_shutdown_fn)(void); /* nvmlShutdown */
typedef const char *(*kt_nvml_error_string_fn)(kt_nvml_return);
/* nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) */
typedef kt_nvml_return (*kt_nvml_by_pci_fn)(const char *, kt_nvml_device *);
/* nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) */
typedef kt_nvml_return (*kt_nvml_by_index_fn)(unsigned int, kt_nvml_device *);
/* nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t, unsigned long long *energy): millijoules
 * since the driver was loaded (Volta and later) */
typedef kt_nvml_return (*kt_nvml_energy_fn)(kt_nvml_device, unsigned long long *);

#endif
