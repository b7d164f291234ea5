/* sim.h - private to the sim backend and its variants: the virtual clock. */
#ifndef KT_SIM_H
#define KT_SIM_H

#include "../kernel.h"

extern const kt_backend_iface kt_backend_sim;
extern const kt_backend_caps kt_backend_sim_caps;
extern const kt_variant kt_variant_sim_lognormal;
extern const kt_variant kt_variant_sim_decoder_layer;

/* Virtual nanoseconds elapsed since the backend opened. */
double kt_sim_now_ns(kt_backend *b);
/* Advances the virtual clock by 'ns' (the duration of one simulated call). */
void kt_sim_advance(kt_backend *b, double ns);
/* Sets the virtual timer's tick (the largest any arm asked for wins; 0 = exact). */
void kt_sim_set_tick(kt_backend *b, double tick_ns);
/* The backend's own seeded generator (so a run's durations depend only on its seed). */
kt_rng *kt_sim_rng(kt_backend *b);
/* Run calls counted so far under 'key' (the call's seed: one count per arm across every
 * input set); counts this one. */
int64_t kt_sim_count_call(kt_backend *b, uint64_t key);

#endif
