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
`korn_graubard` for the choices the simulation grid settled). When
every task has the same rate (all 0, all 1, ...) the design effect cannot be estimated; then
n* = T, the number of tasks: P(all zero | mean mu) <= (1 - mu)^T whatever the heterogeneity, so
such a run carries no more evidence than T independent episodes would, and no assumption
about the heterogeneity is needed. The grid in bench/coverage.py checks coverage by simulation.

Differences between builds (paired by task) use MOVER (Zou & Donner 2008): the two builds'
Korn-Graubard limits combined with the correlation of the per-task rates across builds.

Every function takes arrays whose last axis is the task, so the simulation and the report run
the same code.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sst

ALPHA = 0.05
REFERENCE = ("Korn, E. L. & Graubard, B. I. (1998). Confidence intervals for proportions with small "
             "expected number of positive counts estimated from survey data. Survey Methodology 24(2), 193-201.")
DIFF_REFERENCE = ("Zou, G. Y. & Donner, A. (2008). Construction of confidence limits about effect measures: "
                  "a general approach. Statistics in Medicine 27(10), 1693-1702.")
METHOD = ("Korn-Graubard: Wilson at the design-effect sample size, df-adjusted, kept between tasks and episodes; "
          "Clopper-Pearson over tasks when every task has one episode")
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


def wilson(x: np.ndarray, n: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
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
    return np.clip(DF_FACTOR * off, 1.0, t - 1.0)


DF_FACTOR = 2.0
R_SHRINK = 0.5


def korn_graubard(rates: np.ndarray, counts: np.ndarray, alpha: float = ALPHA,
                  penalty: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) of the mean success probability over tasks; last axis = tasks (T >= 2).

    Wilson limits at n* = n_eff * (z / t_df)^2, kept within [T, n] (the modified-Wilson form
    of Korn-Graubard; before the floor at T, Clopper-Pearson at n* held 93% in every grid
    cell too, but needed a larger df factor and was wider: 30.6 pp mean width over the grid
    against 29.3), except when every task has
    exactly one episode: the data are then exactly binomial(T, mean), and the Clopper-Pearson
    interval at n = T is exact.

    penalty: the exponent of the df factor (z / t_df)^2; 1 is Korn-Graubard's. The report
    always uses 1: an exponent of 0.4 or less would bring most 5- and 8-task cells at ICC 0.1
    under 97.5%, but 20 tasks x 10 repeats (the grid's worst cell) needs the full penalty, so no
    single exponent suits every design and a table per design would be tuned to the grid.
    bench/coverage.py scans it per design to show which cells over 97.5% no penalty can bring
    down without another cell of the same design falling below 93%. (KG's own numerator
    t_{n-1} in place of z, as in R's survey::svyciprop, moved no cell over 97.5% below it.)"""
    rates = np.asarray(rates, float)
    counts = np.asarray(counts, float)
    t = rates.shape[-1]
    p, n_eff, estimated = effective_size(rates, counts)
    z = sst.norm.ppf(1 - alpha / 2)
    df_factor = (z / sst.t.ppf(1 - alpha / 2, informative_df(rates))) ** (2 * penalty)
    # The df adjustment is for an estimated variance; the all-equal case (n* = T) has none.
    # Floor at T, cap at n: whatever the heterogeneity, var(mean of per-task rates) <= mu(1-mu)/T
    # (between-task variance plus mean within-task variance is mu(1-mu), and repeats only
    # shrink the within part), so the true effective size is never below T; and never above n
    # when repeats of a task are not negatively correlated. Without the floor, one task off the
    # boundary (26 tasks x 2, 51 of 52) gave df 1.5, t = 7.6 and n* = 4: [56.3%, 100%].
    n_star = np.clip(np.where(estimated, n_eff * df_factor, n_eff), float(t), counts.sum(-1))
    single = (counts == 1).all(-1)
    lo_w, hi_w = wilson(p * n_star, n_star, alpha)
    lo_c, hi_c = clopper_pearson(p * t, np.full_like(p, float(t)), alpha)
    lo, hi = np.where(single, lo_c, lo_w), np.where(single, hi_c, hi_w)
    return p, np.minimum(lo, p), np.maximum(hi, p)


def mover_difference(ra: np.ndarray, ca: np.ndarray, rb: np.ndarray, cb: np.ndarray,
                     alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean difference B - A, low, high) for builds paired by task; last axis = tasks (T >= 2).

    The correlation between the two means is the Pearson correlation of the per-task rates (0
    where either build's rates do not vary: no evidence of a shared component), shrunk a
    little toward 0 (below)."""
    ra, rb = np.asarray(ra, float), np.asarray(rb, float)
    pa, la, ua = korn_graubard(ra, ca, alpha)
    pb, lb, ub = korn_graubard(rb, cb, alpha)
    da, db = ra - ra.mean(-1, keepdims=True), rb - rb.mean(-1, keepdims=True)
    sa, sb = np.sqrt((da ** 2).sum(-1)), np.sqrt((db ** 2).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where((sa > 1e-12) & (sb > 1e-12), (da * db).sum(-1) / (sa * sb), 0.0)
    r = np.clip(np.nan_to_num(r), -1.0, 1.0)
    # With r near 1 the margins are differences of near-equal terms, so an r estimated from a
    # few informative tasks overstates the cancellation: take r a quarter of a standard error
    # lower on Fisher's z scale, with the informative tasks as its sample size. Without this,
    # two cells of the bench's paired grid fell to 92.7%. Half a standard error: with the df
    # factor of 2, a quarter let 20 tasks x 10 repeats at 0.1 (ICC 0.5) fall to 92.5%; half
    # holds every paired cell at 93.7% or more.
    m = np.minimum(informative_df(ra), informative_df(rb)) + 1
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
