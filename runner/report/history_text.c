/* history_text.c - 'ktrial history': per point and candidate, its speedup in each archive in
 * commit order, and where the verdict or the speedup changed against the archive before. */
#include "report/writers.h"

#include <math.h>
#include <stdlib.h>

int kt_write_history(FILE *f, const kt_output *o)
{
    const kt_history *h = o->history;
    kt_history_series *s = kt_history_series_new(h);
    if (!s)
        return 0;
    if (s->n)
        fprintf(f, "point  candidate\n  %-8s %-20s %-22s %-12s  %s\n", "commit", "start (UTC)",
                "speedup (HL) [CI]", "verdict", "against the run before");
    for (size_t j = 0; j < s->n; j++) {
        fprintf(f, "%s  %s\n", s->points[j], s->cands[j]);
        for (size_t r = 0; r < h->n; r++) {
            const kt_candidate_result *c = kt_history_find(&h->runs[r], s->points[j], s->cands[j]);
            if (!c)
                continue;
            kt_history_change ch;
            int has = kt_history_change_at(&ch, h, r, s->points[j], s->cands[j]);
            char speed[64] = "      — (not measured)"; /* a failed candidate: no speedup */
            if (isfinite(c->speedup))
                snprintf(speed, sizeof(speed), "%7.3f [%.3f, %.3f]", c->speedup, c->ci_low,
                         c->ci_high);
            fprintf(f, "  %-8.8s %-20s %s %-12s",
                    kt_history_str(h->runs[r].doc, "provenance.git.short_commit"),
                    kt_history_str(h->runs[r].doc, "provenance.run.start_utc"), speed,
                    kt_verdict_name(c->verdict));
            if (has && ch.verdict_changed)
                fprintf(f, "  verdict changed");
            if (has && ch.significant)
                fprintf(f, "  speedup changed %+.1f%% [%+.1f%%, %+.1f%%]", 100 * expm1(ch.shift),
                        100 * expm1(ch.ci_low), 100 * expm1(ch.ci_high));
            fputc('\n', f);
        }
    }
    free(s);
    return 0;
}
