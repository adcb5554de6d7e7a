"""Confidence intervals for rates over clustered binomial data (tasks x repeats), vectorised.

A run is a cluster sample: tasks are the clusters, repeats the episodes inside them, and the
quantity of interest is the mean success probability over the population of tasks. Repeats of
a task are correlated (a build that cannot find a switch fails every repeat), there are few
tasks, and rates sit near 0 or 1, so neither a t interval over tasks (zero width when every
task agrees, 55% coverage at 8 tasks x 1 repeat) nor a binomial interval over pooled
episodes (ignores the clustering) holds its level.

Method: Korn & Graubard (1998): a binomial interval evaluated at an effective sample size
n* = n / deff, with the design effect deff estimated from the between-task variance and n*
shrunk by (z / t_df)^2 for the few degrees of freedom of that variance estimate, and kept
between T, the number of tasks, and n, the number of episodes (see `informative_df` and
`korn_graubard` for the choices the simulation grid settled). The exponent of the df shrinkage
is calibrated per run by parametric bootstrap of a beta-binomial over a confidence set for the
mean and the ICC (`calibrated_penalty`; Loh 1987, Berger & Boos 1994). When
every task has the same rate (all 0, all 1, ...) the design effect cannot be estimated; then
n* = T, the number of tasks: P(all zero | mean mu) <= (1 - mu)^T whatever the heterogeneity, so
such a run carries no more evidence than T independent episodes would, and no assumption
about the heterogeneity is needed. And whatever the data, the limits are never inside those
that all-or-nothing tasks (the ICC -> 1 end, where repeats always agree) require
(`all_or_nothing_bounds`). The grid in bench/coverage.py checks coverage, exactly where the
design is small enough to enumerate and by simulation elsewhere.

Differences between builds (paired by task) use MOVER (Zou & Donner 2008): the two builds'
Korn-Graubard limits combined with the correlation of the per-task rates across builds.

Every function takes arrays whose last axis is the task, so the simulation and the report run
the same code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats as sst

# The error rates every figure of a report is made with (one place: stats, sequential and the
# benchmarks read them from here): 95% intervals, two-sided tests at 5%, power 80%.
ALPHA = 0.05
POWER = 0.8
REFERENCE = ("Korn, E. L. & Graubard, B. I. (1998). Confidence intervals for proportions with small "
             "expected number of positive counts estimated from survey data. Survey Methodology 24(2), 193-201.")
DIFF_REFERENCE = ("Zou, G. Y. & Donner, A. (2008). Construction of confidence limits about effect measures: "
                  "a general approach. Statistics in Medicine 27(10), 1693-1702.")
METHOD = ("Korn-Graubard: Wilson at the design-effect sample size, df penalty calibrated by parametric bootstrap, "
          "kept between tasks and episodes and held to Clopper-Pearson over tasks at the all-or-nothing end; "
          "Clopper-Pearson over tasks when every task's episodes agree")
CAL_REFERENCE = ("Berger, R. L. & Boos, D. D. (1994). P values maximized over a confidence set for the nuisance "
                 "parameter. JASA 89(427), 1012-1016; Loh, W.-Y. (1987). Calibrating confidence coefficients. "
                 "JASA 82(397), 155-162.")
DIFF_METHOD = "MOVER (Zou & Donner 2008) of the two builds' Korn-Graubard limits, task-level correlation"


def clopper_pearson(x: np.ndarray, n: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson limits for x successes of n, both possibly non-integer (beta quantiles)."""
    x, n = np.broadcast_arrays(np.asarray(x, float), np.asarray(n, float))
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(x > 0, sst.beta.ppf(alpha / 2, x, n - x + 1), 0.0)
        hi = np.where(x < n, sst.beta.ppf(1 - alpha / 2, x + 1, n - x), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


def effective_size(rates: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean rate over tasks, effective sample size, whether it was estimated).

    rates, counts: (..., T) per-task success rates and episode counts; T >= 2. Estimated:
    n / deff with deff = var(mean) / (p(1-p)/n), truncated below at 1 (tasks more alike than
    binomial noise allows). Not estimated (every task has the same rate): T."""
    rates = np.asarray(rates, float)
    counts = np.asarray(counts, float)
    t = rates.shape[-1]
    p = rates.mean(-1)
    n = counts.sum(-1)
    var = rates.var(-1, ddof=1) / t               # variance of the mean of per-task rates
    estimated = var > 1e-15
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.where(estimated, np.minimum(p * (1 - p) / np.where(estimated, var, 1.0), n), float(t))
    return p, n_eff, estimated


def wilson(x: npt.ArrayLike, n: npt.ArrayLike, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score limits for x successes of n, both possibly non-integer (scipy's binomtest
    takes integers only; an effective sample size is not one)."""
    x, n = np.broadcast_arrays(np.asarray(x, float), np.asarray(n, float))
    z = sst.norm.ppf(1 - alpha / 2)
    p = x / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z / d * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + z * z / (4 * n * n))
    return np.maximum(centre - half, 0.0), np.minimum(centre + half, 1.0)


def informative_df(rates: np.ndarray) -> np.ndarray:
    """Degrees of freedom of the between-task variance: T - 1, but no more than DF_FACTOR times
    the tasks off the boundary nearest the mean (rates above 0 when the mean is low, below 1
    when it is high). Near 0 or 1 the variance rests on those few tasks, and T - 1 then
    understates how uncertain it is (coverage fell to 88% at 60 tasks x 10 repeats, mean 0.02,
    in the simulation grid without the cap). With n* floored at T (`korn_graubard`), 2 is the
    largest factor that keeps every grid cell at 93% (3 let six cells fall to 90%)."""
    rates = np.asarray(rates, float)
    t = rates.shape[-1]
    off = np.minimum((rates > 0).sum(-1), (rates < 1).sum(-1))
    df: np.ndarray = np.clip(DF_FACTOR * off, 1.0, t - 1.0)
    return df


DF_FACTOR = 2.0
Penalty = float | Literal["calibrated"]
PENALTY: Penalty = "calibrated"   # the report's; a number is a fixed exponent (1 = Korn-Graubard's)
R_SHRINK = 0.5


def korn_graubard(rates: np.ndarray, counts: np.ndarray, alpha: float = ALPHA,
                  penalty: Penalty | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) of the mean success probability over tasks; last axis = tasks (T >= 2).

    Wilson limits at n* = n_eff * (z / t_df)^2, kept within [T, n] (the modified-Wilson form
    of Korn-Graubard; before the floor at T, Clopper-Pearson at n* held 93% in every grid
    cell too, but needed a larger df factor and was wider: 30.6 pp mean width over the grid
    against 29.3), and never inside the all-or-nothing bounds (`all_or_nothing_bounds`);
    Clopper-Pearson over tasks when every task's episodes agree (every task with one episode
    included): the data are then those of T tasks, and at the all-or-nothing end exactly
    binomial(T, mean).

    penalty: the exponent of the df factor (z / t_df)^2; 1 is Korn-Graubard's; "calibrated"
    (the report's, PENALTY) chooses it per run by `calibrated_penalty`. With the all-or-nothing
    bounds a fixed exponent of 0.2 would leave no grid cell over 97.5% that few episodes do not
    force, but lets the worst grid cell fall to 93.6% and one beyond the grid (logit-normal task
    probabilities) to 92.4%; the calibration holds 94.1% and 94.0% there at the same mean width.
    bench/coverage.py scans the fixed exponents per design. (KG's own numerator
    t_{n-1} in place of z, as in R's survey::svyciprop, moved no cell over 97.5% below it.)"""
    rates = np.asarray(rates, float)
    counts = np.asarray(counts, float)
    penalty = PENALTY if penalty is None else penalty
    if isinstance(penalty, str):     # "calibrated", the one name a penalty has
        return _Parts.of(rates, counts, alpha).limits(*calibrated_penalty(rates, counts, alpha))
    return _Parts.of(rates, counts, alpha).limits(penalty)


def all_or_nothing_bounds(rates: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(highest lower limit, lowest upper limit, whether every task's episodes agree).

    When tasks are all-or-nothing (each succeeds every time or never: the ICC -> 1 end of
    every heterogeneity, and what a deterministic build often is) a run is k of T tasks at 1
    and the rest at 0, exactly binomial(T, mean), and only Clopper-Pearson over tasks holds
    each tail at alpha / 2 for every mean. A run with more successes may not be surer of a low
    rate than that, so the upper limit is at least Clopper-Pearson's upper limit for the tasks
    that succeeded every time, and the lower limit at most its lower limit for the tasks that
    ever succeeded. Before this, 5 tasks x 3 repeats at 2% covered 90.4% when tasks were
    all-or-nothing (Wilson over 5 tasks, lower limit 3.6% for one task at 3/3)."""
    t = rates.shape[-1]
    ever, every = (rates > 0).sum(-1), (rates >= 1).sum(-1)
    lo, _ = clopper_pearson(ever, np.full(ever.shape, float(t)), alpha)
    _, hi = clopper_pearson(every, np.full(every.shape, float(t)), alpha)
    return lo, hi, ((rates == 0) | (rates == 1)).all(-1)


@dataclass(frozen=True)
class _Parts:
    """What the limits of a batch of runs need besides the df-penalty exponent, computed once
    (the calibration evaluates 21 exponents on the same simulated runs)."""

    p: np.ndarray
    n_eff: np.ndarray
    estimated: np.ndarray
    base: np.ndarray              # (z / t_df)^2, the df factor at exponent 1
    tasks: int
    episodes: np.ndarray
    bounds: tuple[np.ndarray, np.ndarray, np.ndarray]     # all_or_nothing_bounds
    alpha: float

    @classmethod
    def of(cls, rates: np.ndarray, counts: np.ndarray, alpha: float) -> "_Parts":
        p, n_eff, estimated = effective_size(rates, counts)
        base = (sst.norm.ppf(1 - alpha / 2) / sst.t.ppf(1 - alpha / 2, informative_df(rates))) ** 2
        return cls(p, n_eff, estimated, base, rates.shape[-1], counts.sum(-1),
                   all_or_nothing_bounds(rates, alpha), alpha)

    def _wilson(self, g: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _wilson_at_n_star(self.p, self.n_eff, self.estimated, self.base ** np.asarray(g, float),
                                 self.tasks, self.episodes, self.alpha)

    def limits(self, g_lo: float | np.ndarray, g_hi: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean, low, high): Wilson at n* with the df factor base ** penalty, held to the
        all-or-nothing bounds; Clopper-Pearson over tasks where every task's episodes agree
        (one repeat included: the data are then exactly binomial over tasks)."""
        lo_w, hi_w = self._wilson(g_lo)
        if g_hi is not None:   # the calibrated limits have exponents of their own
            _, hi_w = self._wilson(g_hi)
        lo_b, hi_b, binary = self.bounds
        lo = np.where(binary, lo_b, np.minimum(lo_w, lo_b))
        hi = np.where(binary, hi_b, np.maximum(hi_w, hi_b))
        return self.p, np.minimum(lo, self.p), np.maximum(hi, self.p)


def _wilson_at_n_star(p: np.ndarray, n_eff: np.ndarray, estimated: np.ndarray, df_factor: np.ndarray,
                      tasks: int, episodes: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson limits at n* = n_eff * df_factor, n* kept within [tasks, episodes].

    The df adjustment is for an estimated variance; the all-equal case (n* = T) has none.
    Floor at T, cap at n: whatever the heterogeneity, var(mean of per-task rates) <= mu(1-mu)/T
    (between-task variance plus mean within-task variance is mu(1-mu), and repeats only shrink
    the within part), so the true effective size is never below T; and never above n when
    repeats of a task are not negatively correlated. Without the floor, one task off the
    boundary (26 tasks x 2, 51 of 52) gave df 1.5, t = 7.6 and n* = 4: [56.3%, 100%]."""
    n_star = np.clip(np.where(estimated, n_eff * df_factor, n_eff), float(tasks), episodes)
    return wilson(p * n_star, n_star, alpha)


# --------------------------------------------------------------------------- calibrated penalty

CAL_P = np.array([0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5])
CAL_RHO = np.array([0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
CAL_G = np.linspace(0.0, 1.0, 21)
CAL_SIMS = 4000
CAL_SEED = 5
CAL_Q = 0.1
CAL_NP = 9
_TABLES: dict[tuple[tuple[float, ...], float, int, int, int, int], np.ndarray] = {}


def coverage_point(counts: np.ndarray, i: int, j: int, alpha: float = ALPHA, sims: int = CAL_SIMS,
                   seed: int = CAL_SEED) -> np.ndarray:
    """(2, len(CAL_G)): each limit's own coverage, 1 - P(low > mean) and 1 - P(high < mean), of
    korn_graubard(penalty=g) for each g in CAL_G, for runs with these per-task
    episode counts under a beta-binomial with mean CAL_P[i] and intra-task correlation
    CAL_RHO[j]. Seeded per point and cached, so the report is deterministic and computes only
    the points its runs need."""
    counts = np.asarray(counts, float)
    key = (tuple(counts.tolist()), alpha, sims, seed, i, j)
    if key not in _TABLES:
        rng = np.random.default_rng([seed, i, j])
        p, rho = CAL_P[i], CAL_RHO[j]
        c = np.broadcast_to(counts, (sims, counts.shape[-1]))
        pi = np.full(c.shape, p) if rho == 0 else rng.beta(p * (1 / rho - 1), (1 - p) * (1 / rho - 1), size=c.shape)
        rates = rng.binomial(c.astype(int), pi) / c
        parts = _Parts.of(rates, c, alpha)
        cov = np.empty((2, len(CAL_G)))
        for g_i, g in enumerate(CAL_G):
            _, lo, hi = parts.limits(g)
            cov[:, g_i] = 1 - np.mean(lo > p), 1 - np.mean(hi < p)
        _TABLES[key] = cov
    return _TABLES[key]


def coverage_table(counts: np.ndarray, alpha: float = ALPHA,
                   points: Iterable[tuple[int, int]] | None = None) -> np.ndarray:
    """(len(CAL_P), len(CAL_RHO), 2, len(CAL_G)) coverage table of `coverage_point`; only the
    (i, j) in points are computed (the others are nan), all when points is None."""
    tab = np.full((len(CAL_P), len(CAL_RHO), 2, len(CAL_G)), np.nan)
    for i, j in (points if points is not None else np.ndindex(len(CAL_P), len(CAL_RHO))):
        tab[i, j] = coverage_point(counts, int(i), int(j), alpha)
    return tab


def _grid_position(p: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fractional table coordinates (log p, rho) of each point, and the lower corner of its cell;
    p is folded to min(p, 1 - p)."""
    pp = np.clip(np.minimum(p, 1 - p), CAL_P[0], CAL_P[-1])
    x = np.interp(np.log(pp), np.log(CAL_P), np.arange(len(CAL_P)))
    y = np.interp(np.clip(rho, 0, CAL_RHO[-1]), CAL_RHO, np.arange(len(CAL_RHO)))
    i0 = np.minimum(np.floor(x).astype(int), len(CAL_P) - 2)
    j0 = np.minimum(np.floor(y).astype(int), len(CAL_RHO) - 2)
    return x, y, i0, j0


def _corners(p: np.ndarray, rho: np.ndarray) -> set[tuple[int, int]]:
    _, _, i0, j0 = _grid_position(p, rho)
    return {(a + da, b + db) for a, b in set(zip(i0.ravel().tolist(), j0.ravel().tolist()))
            for da in (0, 1) for db in (0, 1)}


def _interp_cov(tab: np.ndarray, p: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Bilinear interpolation of the table in (log p, rho)."""
    x, y, i0, j0 = _grid_position(p, rho)
    fx, fy = (x - i0)[..., None, None], (y - j0)[..., None, None]
    out = ((1 - fx) * (1 - fy) * tab[i0, j0] + fx * (1 - fy) * tab[i0 + 1, j0]
           + (1 - fx) * fy * tab[i0, j0 + 1] + fx * fy * tab[i0 + 1, j0 + 1])
    # above 1/2 the table is read at 1 - p, where the runs are mirrored: the lower limit's row
    # there is the upper limit's here
    return np.where((p > 0.5)[..., None, None], out[..., ::-1, :], out)


def icc_upper(rates: np.ndarray, counts: np.ndarray, q: float | None = None) -> np.ndarray:
    """Upper bound of the intra-task correlation: the method-of-moments ICC of a beta-binomial
    (var of per-task rates = mu(1-mu)(rho + (1-rho) mean(1/n_i))) with the variance at its
    chi-square upper bound S^2 df / chi2_q(df), df the informative degrees of freedom."""
    rates, counts = np.asarray(rates, float), np.asarray(counts, float)
    p = rates.mean(-1)
    h = (1 / counts).mean(-1)
    df = informative_df(rates)
    q = CAL_Q if q is None else q
    s2 = rates.var(-1, ddof=1) * df / sst.chi2.ppf(q, df)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (s2 / (p * (1 - p)) - h) / (1 - h)
    rho: np.ndarray = np.clip(np.nan_to_num(r, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0)
    return rho


def calibrated_penalty(rates: np.ndarray, counts: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """(lower limit's, upper limit's) exponent, shape (2, ...): per run and per limit, the smallest
    df-penalty exponent (of CAL_G) under which that limit misses at most alpha / 2 (equal tails: a
    limit read alone, "at least 40%", keeps its own 97.5%) under every beta-binomial of a
    confidence set for the nuisance parameters, by parametric bootstrap of the run's own design
    (its per-task counts): mean anywhere between the limit at the full penalty and p-hat, where
    that limit can be wrong (CAL_NP points), ICC at its upper bound `icc_upper` (q = CAL_Q); 1
    when none does. (One exponent for both limits, asked of both across the whole interval, kept
    8 tasks x 3 repeats at 50%, ICC 0.1 at 97.51%: the lower limit was held to means it cannot
    miss.) This is Loh's (1987) calibration of the confidence coefficient, with the coverage
    taken at the worst point of a confidence set rather than at the plug-in fit (Berger & Boos
    1994): at the plug-in fit (ICC point estimate, mean p-hat) it let 8 tasks x 10 repeats at
    10%, ICC 0.5, fall to 87%, since the between-task variance is underestimated exactly in the
    runs that miss. The
    coverage tables (`coverage_point`, 4000 runs per point, seeded) are computed only at the
    grid points a run needs and cached, about 0.15 s per new design. Where heterogeneity or
    closeness to 0 or 1 needs it the exponent stays 1 and the limit is Korn-Graubard's."""
    rates, counts = np.asarray(rates, float), np.asarray(counts, float)
    rates, counts = np.broadcast_arrays(rates, counts)
    t = rates.shape[-1]
    flat_r, flat_c = rates.reshape(-1, t), counts.reshape(-1, t)
    g = np.ones((2, flat_r.shape[0]))
    if (flat_c == 1).all():      # Clopper-Pearson over tasks: no df penalty to calibrate
        return g.reshape((2,) + rates.shape[:-1])
    p1, lo1, hi1 = korn_graubard(flat_r, flat_c, alpha, penalty=1.0)
    ru = icc_upper(flat_r, flat_c)
    designs, inverse = np.unique(flat_c, axis=0, return_inverse=True)
    span = np.linspace(0, 1, CAL_NP)
    for d in range(designs.shape[0]):
        rows = np.nonzero(inverse.reshape(-1) == d)[0]
        if (designs[d] == 1).all():
            continue
        rs = np.repeat(ru[rows, None], CAL_NP, 1)
        # each limit where it can be wrong: the lower one for means between it and p-hat
        for side, (a, b) in enumerate(((lo1[rows], p1[rows]), (p1[rows], hi1[rows]))):
            ps = a[:, None] + (b - a)[:, None] * span
            tab = coverage_table(designs[d], alpha, _corners(ps, rs))
            cov = _interp_cov(tab, ps, rs)[:, :, side, :].min(1)
            ok = cov >= 1 - alpha / 2
            g[side, rows] = np.where(ok.any(-1), CAL_G[ok.argmax(-1)], 1.0)
    return g.reshape((2,) + rates.shape[:-1])


def mover_difference(ra: np.ndarray, ca: np.ndarray, rb: np.ndarray, cb: np.ndarray,
                     alpha: float = ALPHA, penalty: Penalty | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean difference B - A, low, high) for builds paired by task; last axis = tasks (T >= 2).

    The correlation between the two means is the Pearson correlation of the per-task rates (0
    where either build's rates do not vary: no evidence of a shared component), shrunk a
    little toward 0 (below). penalty: as in `korn_graubard` (the sequential rule, whose designs
    differ run by run, uses Korn-Graubard's own exponent 1 rather than the calibration)."""
    ra, rb = np.asarray(ra, float), np.asarray(rb, float)
    pa, la, ua = korn_graubard(ra, ca, alpha, penalty)
    pb, lb, ub = korn_graubard(rb, cb, alpha, penalty)
    da, db = ra - ra.mean(-1, keepdims=True), rb - rb.mean(-1, keepdims=True)
    sa, sb = np.sqrt((da ** 2).sum(-1)), np.sqrt((db ** 2).sum(-1))
    # r = 0 where the run carries no evidence of a shared component: either build's rates do
    # not vary, or the builds agree exactly on every task (every difference the same; r would be
    # 1 and the margins cancel: the demo's 4 tasks x 2 repeats, 0/2, 2/2, 0/2, 2/2 on both builds,
    # came out as [-0.1, +0.1] pp). Such runs say nothing about how much the pairing removes (no
    # task's two rates differ by episode noise one could measure), just as all-equal rates say
    # nothing about the design effect (n* = T above).
    evidence = (sa > 1e-12) & (sb > 1e-12) & ((da - db).std(-1) >= 1e-12)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(evidence, (da * db).sum(-1) / (sa * sb), 0.0)
    r = np.clip(np.nan_to_num(r), -1.0, 1.0)
    # With r near 1 the margins are differences of near-equal terms, so an r estimated from a
    # few informative tasks overstates the cancellation: take r a quarter of a standard error
    # lower on Fisher's z scale, with the informative tasks as its sample size. Without this,
    # two cells of the bench's paired grid fell to 92.7%. Half a standard error: with the df
    # factor of 2, a quarter let 20 tasks x 10 repeats at 0.1 (ICC 0.5) fall to 92.5%; half
    # holds every paired cell at 93.7% or more.
    m = np.minimum(informative_df(ra), informative_df(rb)) + 1
    # A sample correlation of exactly 1 is common with few tasks and 0/1 rates (builds at 0, 1,
    # 0, 1 and 1/3, 1, 1/3, 1 are perfectly correlated), and its Fisher z is infinite, so no
    # shift on that scale moves it: the margins cancelled to [19.9, 20.1] pp in the bench's
    # 5 tasks x 3 repeats. Cap r at 1 - 1/m first, the tasks being all the evidence there is.
    r = np.minimum(r, 1 - 1 / m)
    z = np.arctanh(np.clip(r, -0.999999, 0.999999)) - R_SHRINK / np.sqrt(np.maximum(m - 3, 1))
    r = np.tanh(z)
    d = pb - pa
    low = d - np.sqrt(np.maximum((pb - lb) ** 2 + (ua - pa) ** 2 - 2 * r * (pb - lb) * (ua - pa), 0.0))
    high = d + np.sqrt(np.maximum((ub - pb) ** 2 + (pa - la) ** 2 - 2 * r * (ub - pb) * (pa - la), 0.0))
    return d, np.maximum(low, -1.0), np.minimum(high, 1.0)


def t_interval_clipped(values: np.ndarray, alpha: float = ALPHA,
                       bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The previous headline method (mean +- t * SD / sqrt(T), clipped): kept for comparison."""
    v = np.asarray(values, float)
    t = v.shape[-1]
    m = v.mean(-1)
    half = sst.t.ppf(1 - alpha / 2, t - 1) * v.std(-1, ddof=1) / np.sqrt(t)
    return m, np.maximum(m - half, bounds[0]), np.minimum(m + half, bounds[1])
