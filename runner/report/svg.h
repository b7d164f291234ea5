/* svg.h - the little drawing kit of the HTML reports: escaped text, a plot frame with axes
 * (linear or logarithmic), and marks placed in data coordinates. Inline SVG, no script. */
#ifndef KT_SVG_H
#define KT_SVG_H

#include <stdio.h>

/* Writes 's' with &, <, >, " and ' escaped, and control characters dropped. */
void kt_html_escape(FILE *f, const char *s);

typedef struct kt_plot {
    FILE *f;
    double x0, x1, y0, y1;           /* data range */
    int log_x, log_y;                /* natural-log axes (values must be > 0) */
    double left, top, width, height; /* the plotting area inside the SVG, pixels */
} kt_plot;

/* Opens <svg class='cls'> of 'w' x 'h' pixels with a plotting area that leaves room for the
 * axes' labels; the ranges must be set before kt_plot_axes. */
void kt_plot_open(kt_plot *p, FILE *f, const char *cls, double w, double h, double left_margin);
void kt_plot_close(kt_plot *p);
/* The unit a time axis whose largest value is 'ns' nanoseconds reads best in: "s", "ms",
 * "µs" or "ns", with *scale its size in ns (1e6 for "ms"). */
const char *kt_time_unit(double ns, double *scale);
/* Pixel position of a data value. */
double kt_plot_x(const kt_plot *p, double x);
double kt_plot_y(const kt_plot *p, double y);
/* Axes with about 'ticks' nice ticks on x (and y when 'y_ticks' > 0), and their titles. */
void kt_plot_axes(kt_plot *p, int ticks, int y_ticks, const char *x_title, const char *y_title);
/* A vertical (or horizontal) reference line at data value 'v', dashed, with a label. */
void kt_plot_vline(kt_plot *p, double v, const char *cls, const char *label);
void kt_plot_hline(kt_plot *p, double v, const char *cls, const char *label);

#endif
