/* svg.c - see svg.h. */
#include "report/svg.h"

#include <math.h>
#include <string.h>

void kt_html_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '&')
            fputs("&amp;", f);
        else if (c == '<')
            fputs("&lt;", f);
        else if (c == '>')
            fputs("&gt;", f);
        else if (c == '"')
            fputs("&quot;", f);
        else if (c == '\'')
            fputs("&#39;", f);
        else if (c >= 0x20 || c == '\n' || c == '\t')
            fputc(c, f);
    }
}

static double fwd(double v, int log_scale)
{
    return log_scale ? log(v) : v;
}

double kt_plot_x(const kt_plot *p, double x)
{
    double a = fwd(p->x0, p->log_x), b = fwd(p->x1, p->log_x);
    return p->left + (b > a ? (fwd(x, p->log_x) - a) / (b - a) : 0.5) * p->width;
}

double kt_plot_y(const kt_plot *p, double y)
{
    double a = fwd(p->y0, p->log_y), b = fwd(p->y1, p->log_y);
    return p->top + p->height - (b > a ? (fwd(y, p->log_y) - a) / (b - a) : 0.5) * p->height;
}

const char *kt_time_unit(double ns, double *scale)
{
    static const struct {
        double scale;
        const char *name;
    } units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}, {1, "ns"}};
    size_t i = 0;
    while (i + 1 < sizeof(units) / sizeof(units[0]) && !(ns >= units[i].scale))
        i++;
    *scale = units[i].scale;
    return units[i].name;
}

void kt_plot_open(kt_plot *p, FILE *f, const char *cls, double w, double h, double left_margin)
{
    p->f = f;
    p->log_x = p->log_y = 0; /* linear unless the caller says otherwise after opening */
    p->left = left_margin;
    p->top = 10;
    p->width = w - left_margin - 20;
    p->height = h - 50;
    fprintf(f,
            "<svg class='%s' xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
            "viewBox='0 0 %.0f %.0f' role='img'>\n",
            cls, w, h, w, h);
    fprintf(f, "<rect class='frame' x='%.1f' y='%.1f' width='%.1f' height='%.1f'/>\n", p->left,
            p->top, p->width, p->height);
}

void kt_plot_close(kt_plot *p)
{
    fputs("</svg>\n", p->f);
}

/* A step of 1, 2 or 5 times a power of ten giving about 'n' intervals over 'span'. */
static double nice_step(double span, int n)
{
    double raw = span / (n > 0 ? n : 1), mag = pow(10, floor(log10(raw)));
    double r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

static void tick_label(char *buf, size_t len, double v)
{
    if (fabs(v) >= 1e4 || (fabs(v) < 1e-3 && v != 0))
        snprintf(buf, len, "%.2g", v);
    else
        snprintf(buf, len, "%.4g", v);
}

/* Tick values between a and b: linear steps, or for a log axis steps of the value itself
 * when it spans less than a decade, else powers of ten times 1, 2 and 5. */
static int ticks_for(double *out, int max, double a, double b, int log_scale, int n)
{
    int k = 0;
    if (!(b > a))
        return 0;
    if (log_scale && b / a > 10) {
        for (double d = pow(10, floor(log10(a))); d <= b && k < max; d *= 10)
            for (int m = 1; m <= 5 && k < max; m += m == 1 ? 1 : 3)
                if (d * m >= a && d * m <= b)
                    out[k++] = d * m;
        return k;
    }
    double step = nice_step(b - a, n);
    for (double v = ceil(a / step) * step; v <= b + step * 1e-9 && k < max; v += step)
        out[k++] = fabs(v) < step * 1e-9 ? 0 : v;
    return k;
}

void kt_plot_axes(kt_plot *p, int ticks, int y_ticks, const char *x_title, const char *y_title)
{
    double t[64];
    char buf[32];
    double base = p->top + p->height;
    int n = ticks_for(t, 64, p->x0, p->x1, p->log_x, ticks);
    for (int i = 0; i < n; i++) {
        double x = kt_plot_x(p, t[i]);
        tick_label(buf, sizeof(buf), t[i]);
        fprintf(p->f,
                "<line class='tick' x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f'/>"
                "<text class='tick-label' x='%.1f' y='%.1f' text-anchor='middle'>%s</text>\n",
                x, base, x, base + 4, x, base + 16, buf);
    }
    if (x_title)
        fprintf(p->f, "<text class='axis-title' x='%.1f' y='%.1f' text-anchor='middle'>",
                p->left + p->width / 2, base + 34);
    kt_html_escape(p->f, x_title);
    if (x_title)
        fputs("</text>\n", p->f);
    n = y_ticks > 0 ? ticks_for(t, 64, p->y0, p->y1, p->log_y, y_ticks) : 0;
    for (int i = 0; i < n; i++) {
        double y = kt_plot_y(p, t[i]);
        tick_label(buf, sizeof(buf), t[i]);
        fprintf(p->f,
                "<line class='tick' x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f'/>"
                "<text class='tick-label' x='%.1f' y='%.1f' text-anchor='end'>%s</text>\n",
                p->left - 4, y, p->left, y, p->left - 6, y + 4, buf);
    }
    if (y_title) {
        fprintf(p->f,
                "<text class='axis-title' x='12' y='%.1f' text-anchor='middle' "
                "transform='rotate(-90 12 %.1f)'>",
                p->top + p->height / 2, p->top + p->height / 2);
        kt_html_escape(p->f, y_title);
        fputs("</text>\n", p->f);
    }
}

void kt_plot_vline(kt_plot *p, double v, const char *cls, const char *label)
{
    double x = kt_plot_x(p, v);
    fprintf(p->f, "<line class='%s' x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f'/>", cls, x, p->top, x,
            p->top + p->height);
    if (label) {
        fprintf(p->f, "<text class='ref-label' x='%.1f' y='%.1f'>", x + 3, p->top + 10);
        kt_html_escape(p->f, label);
        fputs("</text>", p->f);
    }
    fputc('\n', p->f);
}

void kt_plot_hline(kt_plot *p, double v, const char *cls, const char *label)
{
    double y = kt_plot_y(p, v);
    fprintf(p->f, "<line class='%s' x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f'/>", cls, p->left, y,
            p->left + p->width, y);
    if (label) {
        fprintf(p->f, "<text class='ref-label' x='%.1f' y='%.1f'>", p->left + 4, y - 3);
        kt_html_escape(p->f, label);
        fputs("</text>", p->f);
    }
    fputc('\n', p->f);
}
