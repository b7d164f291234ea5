"""Compares runner/stats (through the kt_stats_oracle program in $KT_BUILD_DIR/tests)
with scipy 1.10: Wilcoxon and Mann-Whitney p-values, Hodges-Lehmann estimates (numpy
median of all Walsh averages / pairwise differences), and the confidence intervals
rebuilt here from the sorted pairs and independently computed null distributions.

Where runner/stats deliberately differs from scipy's defaults (documented in stats.h),
the scipy call names the method ours uses: a one-sample case with n <= 50, no zeros but
tied |d| is compared with wilcoxon(method='approx') (scipy 1.10 would run its exact test
on a truncated tied rank sum).

scipy comes from Debian's python3-scipy; when the interpreter running this lacks it, the
script re-runs itself under /usr/bin/python3, and skips (77) if that has none either."""
import math
import os
import subprocess
import sys
import unittest

try:
    import numpy as np
    import scipy
    import scipy.stats as st
except ImportError:
    system_python = "/usr/bin/python3"
    if os.path.exists(system_python) and not os.environ.get("KT_STATS_REEXEC"):
        os.environ["KT_STATS_REEXEC"] = "1"
        os.execv(system_python, [system_python] + sys.argv)
    print("skipping: numpy/scipy not importable")
    sys.exit(77)

P_RTOL = 1e-6  # p-values and coverage
X_RTOL = 1e-12  # estimates and interval ends: the same floating-point pair values


def signed_rank_cdf(n):
    """P(W+ <= t), t = 0 .. n(n+1)/2, from counts of subsets of {1..n} by sum."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for i in range(1, n + 1):
        counts[i:] = counts[i:] + counts[:-i].copy()
    return np.cumsum(counts) / 2.0**n


def mann_whitney_cdf(m, n):
    """P(U <= t), t = 0 .. m n, from counts of m-subsets of ranks 1..m+n by rank sum."""
    top = m * (m + n) + 1
    dp = np.zeros((m + 1, top))
    dp[0, 0] = 1
    for r in range(1, m + n + 1):
        for j in range(min(r, m), 0, -1):
            dp[j, r:] += dp[j - 1, :-r]
    counts = dp[m, m * (m + 1) // 2 : m * (m + 1) // 2 + m * n + 1]
    return np.cumsum(counts) / counts.sum()


def critical(cdf, m, sd, conf):
    """(k, achieved): exact from 'cdf' when given, else the normal approximation."""
    alpha = 1 - conf
    if cdf is not None:
        t = int(np.searchsorted(cdf, alpha / 2, side="right"))  # count of cdf <= alpha/2
        return t, (1 - 2 * cdf[t - 1]) if t else 1.0
    z = st.norm.ppf((1 + conf) / 2)
    k = max(1, math.floor(m / 2 - z * sd))
    return k, 1 - 2 * st.norm.cdf((k - 0.5 - m / 2) / sd)


def interval(sorted_pairs, k):
    if k == 0:
        return -math.inf, math.inf
    return sorted_pairs[k - 1], sorted_pairs[len(sorted_pairs) - k]


def one_sample_expected(d, conf):
    n = len(d)
    iu = np.triu_indices(n)
    walsh = np.sort(((d[:, None] + d[None, :]) / 2)[iu])
    m = n * (n + 1) // 2
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    k, achieved = critical(signed_rank_cdf(n) if n <= 50 else None, m, sd, conf)
    nonzero = np.abs(d[d != 0])
    ties = len(np.unique(nonzero)) < len(nonzero)
    exact = n <= 50 and len(nonzero) == n and not ties
    method = "auto" if exact or n > 50 or len(nonzero) < n else "approx"
    p = st.wilcoxon(d, method=method).pvalue
    p_cc = st.wilcoxon(d, method=method, correction=True).pvalue
    lo, hi = interval(walsh, k)
    return dict(estimate=np.median(walsh), ci_low=lo, ci_high=hi, achieved=achieved,
                p=p, exact=int(exact), p_cc=p_cc)


def two_sample_expected(a, b, conf):
    na, nb = len(a), len(b)
    diffs = np.sort(np.subtract.outer(a, b).ravel())
    m = na * nb
    sd = math.sqrt(na * nb * (na + nb + 1) / 12)
    k, achieved = critical(mann_whitney_cdf(na, nb) if na <= 50 and nb <= 50 else None,
                           m, sd, conf)
    pooled = np.concatenate([a, b])
    exact = (na <= 8 or nb <= 8) and len(np.unique(pooled)) == len(pooled)
    p = st.mannwhitneyu(a, b, alternative="two-sided", method="auto",
                        use_continuity=True).pvalue
    lo, hi = interval(diffs, k)
    return dict(estimate=np.median(diffs), ci_low=lo, ci_high=hi, achieved=achieved,
                p=p, exact=int(exact), p_cc=math.nan)


def one_sample_cases(rng):
    """(label, d, confidence): continuous, tied, with zeros, n from 5 to 200."""
    cases = []
    for n in (5, 6, 7, 8, 9, 10, 20, 33, 50, 51, 80, 200):
        cases.append((f"normal n={n}", rng.normal(0.3, 1.0, n), 0.95))
    for n in (6, 12, 40, 50, 120):
        cases.append((f"ties n={n}", np.round(rng.normal(0.2, 1.0, n), 1), 0.95))
    for n in (15, 45, 90):
        d = rng.normal(0.1, 0.05, n)
        d[rng.choice(n, n // 5, replace=False)] = 0.0
        cases.append((f"zeros n={n}", d, 0.95))
    cases.append(("all positive n=25", np.abs(rng.normal(0, 1, 25)) + 0.01, 0.95))
    cases.append(("conf 0.9 n=30", rng.normal(0.0, 1.0, 30), 0.90))
    cases.append(("conf 0.99 n=150", rng.normal(-0.1, 1.0, 150), 0.99))
    cases.append(("log-ratios n=60", np.log(rng.lognormal(0, 0.05, 60) * 1.03), 0.95))
    return cases


def two_sample_cases(rng):
    cases = []
    for na, nb in ((1, 6), (2, 3), (3, 4), (5, 8), (8, 30), (8, 9), (6, 200), (9, 9), (20, 25), (50, 50),
                   (60, 40), (200, 150)):
        cases.append((f"normal {na}x{nb}", rng.normal(0.5, 1, na), rng.normal(0, 1, nb), 0.95))
    for na, nb in ((7, 7), (30, 35), (100, 80)):
        a, b = np.round(rng.normal(0.3, 1, na), 1), np.round(rng.normal(0, 1, nb), 1)
        cases.append((f"ties {na}x{nb}", a, b, 0.95))
    cases.append(("conf 0.9 12x15", rng.normal(0, 1, 12), rng.normal(0, 1, 15), 0.90))
    return cases


class StatsAgainstScipy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        build = os.environ.get("KT_BUILD_DIR")
        if not build:
            raise unittest.SkipTest("KT_BUILD_DIR not set")
        cls.oracle = os.path.join(build, "tests", "kt_stats_oracle")
        rng = np.random.default_rng(20240611)
        cls.cases = [("w",) + c for c in one_sample_cases(rng)]
        cls.cases += [("m",) + c for c in two_sample_cases(rng)]
        lines = []
        for case in cls.cases:
            if case[0] == "w":
                _, _, d, conf = case
                vals = " ".join(repr(float(v)) for v in d)
                lines.append(f"w {conf} {len(d)} {vals}")
            else:
                _, _, a, b, conf = case
                vals = " ".join(repr(float(v)) for v in np.concatenate([a, b]))
                lines.append(f"m {conf} {len(a)} {len(b)} {vals}")
        out = subprocess.run([cls.oracle], input="\n".join(lines) + "\n", text=True,
                             capture_output=True, check=True).stdout.split("\n")
        cls.results = []
        for line in out[: len(cls.cases)]:
            f = line.split()
            cls.results.append(dict(estimate=float(f[0]), ci_low=float(f[1]),
                                    ci_high=float(f[2]), achieved=float(f[3]),
                                    p=float(f[4]), exact=int(f[5]), p_cc=float(f[6])))

    def check(self, label, got, want):
        with self.subTest(label):
            self.assertEqual(got["exact"], want["exact"], "exact flag")
            for key in ("estimate", "ci_low", "ci_high"):
                if math.isinf(want[key]):
                    self.assertEqual(got[key], want[key], key)
                else:
                    self.assertTrue(math.isclose(got[key], want[key], rel_tol=X_RTOL,
                                                 abs_tol=1e-15), f"{key} {got[key]!r} != {want[key]!r}")
            for key in ("achieved", "p", "p_cc"):
                if math.isnan(want[key]):
                    self.assertTrue(math.isnan(got[key]), key)
                else:
                    self.assertTrue(math.isclose(got[key], want[key], rel_tol=P_RTOL, abs_tol=1e-300),
                                    f"{key} {got[key]!r} != {want[key]!r}")

    def test_count(self):
        self.assertEqual(len(self.results), len(self.cases))
        self.assertGreaterEqual(len(self.cases), 40)

    def test_signed_rank(self):
        for case, got in zip(self.cases, self.results):
            if case[0] == "w":
                _, label, d, conf = case
                self.check(label, got, one_sample_expected(d, conf))

    def test_two_sample(self):
        for case, got in zip(self.cases, self.results):
            if case[0] == "m":
                _, label, a, b, conf = case
                self.check(label, got, two_sample_expected(a, b, conf))

    def test_exact_and_approx_both_exercised(self):
        flags = {(c[0], r["exact"]) for c, r in zip(self.cases, self.results)}
        self.assertEqual(flags, {("w", 0), ("w", 1), ("m", 0), ("m", 1)})


if __name__ == "__main__":
    print(f"scipy {scipy.__version__}", file=sys.stderr)
    unittest.main(warnings="ignore")  # scipy warns on small approximations; we know
