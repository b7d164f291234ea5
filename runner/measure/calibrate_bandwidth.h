/* calibrate_bandwidth.h - the host's read bandwidth, for the roofline check of every timed call
 * (arm/arm.h's kt_read_bandwidth, docs/robustness.md). */
#ifndef KT_CALIBRATE_BANDWIDTH_H
#define KT_CALIBRATE_BANDWIDTH_H

#include "arm/arm.h"

/* The bandwidth: KT_READ_BANDWIDTH_GBS when set (a positive number of GB/s), else from the
 * calibration cache, else measured now (and cached); measured once per process. NULL when it
 * could not be had (the roofline check then does not run, and the summary says so). */
const kt_read_bandwidth *kt_read_bandwidth_host(void);

/* The bandwidth where the roofline check applies to 'backend''s calls, else NULL with the reason
 * in 'why' (a virtual clock; a device's memory without KT_READ_BANDWIDTH_GBS; none measured). */
const kt_read_bandwidth *kt_read_bandwidth_for(const char *backend, const char **why);

/* What the calls of 'spec''s arms are checked with, for provenance and the summary: the
 * names of the kind's checks (NULL-terminated, NULL for a kind without), and one line that names
 * them with the roofline's figures or why it is off. */
const char *const *kt_checks_ran(const kt_spec *spec);
void kt_checks_line(char *out, size_t len, const kt_spec *spec);

#endif
