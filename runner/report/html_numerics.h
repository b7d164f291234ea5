/* html_numerics.h - the numerics table of a point in the HTML report (html_numerics.c). */
#ifndef KT_HTML_NUMERICS_H
#define KT_HTML_NUMERICS_H

#include "result/point.h"

#include <cjson/cJSON.h>
#include <stdio.h>

/* The numerics per input set of every arm of 'pt', under a heading, with the limits of the
 * run's result.json 'doc'; nothing at all where no arm was compared (a command trial without
 * outputs). */
void kt_html_numerics_table(FILE *f, const cJSON *doc, const kt_point_result *pt);

#endif
