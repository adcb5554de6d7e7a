"""Coverage of the report's 95% intervals, and the paired tests' size and power, by seeded simulation.

A simulated run: T tasks whose success probabilities are drawn from a Beta distribution with
mean mu and concentration kappa (intra-task correlation 1 / (1 + kappa)), R repeats per task,
each episode a Bernoulli draw. The truth is mu, the mean success probability over the
population of tasks. Each cell reports the share of intervals that contain mu (coverage) and
their mean width, exactly where the design has at most EXACT_MAX distinct runs (every run of
unordered per-task counts, weighted by its beta-binomial probability: 140 of the 200 cells) and
over --sims simulated runs elsewhere, for the report's method (agent_host.report.intervals)
and for the previous one (t interval over per-task rates, clipped to [0, 1]) side by side.

Grid: tasks {5, 8, 20, 60, 100} x repeats {1, 3, 5, 10} x mu {0.02, 0.1, 0.5, 0.9, 0.98} x
kappa {9 (ICC 0.1), 1 (ICC 0.5)}. Target: coverage >= 93% in every cell; <= 97.5% except where
few episodes force conservatism. A cell is named forced when `valid_floor`, computed exactly, is
97.5% or more: no interval whose limits are each one-sided 97.5% bounds at every heterogeneity
(all-or-nothing tasks included) and never lowered by more successes can cover less there.

Beyond the grid (--beyond-sims): the same check at ICC 0.9 (repeats of a task nearly always
agree, as a build decoding greedily does) and with logit-normal task probabilities (sigma 1, 3),
off the Beta family the report's calibration simulates.

Trade-off scan: every cell with repeats is also evaluated with the df penalty of Korn-Graubard
raised to each fixed exponent in PENALTIES (0 = no penalty, 1 = Korn-Graubard's; the report
calibrates it per run). A cell over 97.5% that `valid_floor` does not force is put down to the trade-off only when, for its design (tasks x repeats, which the interval knows),
every exponent that keeps all ten cells of the design (5 means x 2 heterogeneities, which it
does not know) at 93% or more leaves this cell over 97.5%.

Correlated instances (--instance-sims): a task in a suite gives several task instances (its
parameter sets, its verify variant), and they succeed or fail together far more than instances
of different tasks. Each of T tasks draws a probability from the Beta above; each of its m
instances takes it with probability `within`, else draws its own from the same Beta; R repeats
per instance. The report pools a task's instances into one cluster (report/selection.py,
cluster_of); the previous report took each instance as an independent unit. Both are checked,
for the rate and for the paired difference (B = A degraded by delta per instance).

Build vs build: build B's task probabilities are build A's times (1 - delta / mu_A) (a uniform
relative degradation, the truth being -delta); the difference interval (MOVER) and the previous
paired t interval are checked the same way, and under delta = 0 (B's probabilities equal A's)
the sign-flip test over tasks and the exact McNemar test over episode pairs are run at alpha 5%
(type I error), then at a few deltas (power).

Balanced recognition (--detector-sims): each task has a sensitivity probability (its verify
variant: task_complete at the goal) and a specificity probability (its base variants: no
task_complete while the goal does not hold), Beta(mu, 1) marginals (ICC 0.5) joined by a
Gaussian copula of correlation {-0.8, 0, 0.8}; 60% of the tasks have a verify variant. The
report's balanced figure, (sensitivity + specificity) / 2 with the mean of the two Korn-Graubard
intervals' limits, is checked against the truth (mu_sens + mu_spec) / 2.

    python bench/coverage.py                 # the whole grid, a few minutes on one core
    python bench/coverage.py --sims 500      # quicker, noisier
    python bench/coverage.py --json          # machine-readable
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import stats as sst
from scipy.optimize import brentq
from scipy.special import expit, gammaln

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_host.report import intervals as iv  # noqa: E402

TASKS = (5, 8, 20, 60, 100)
REPEATS = (1, 3, 5, 10)
MEANS = (0.02, 0.1, 0.5, 0.9, 0.98)
KAPPAS = (9.0, 1.0)
FLOOR, CEILING = 0.93, 0.975
NARROW = 0.01               # a difference interval under 1 pp wide claims more than any run here shows
PENALTIES = tuple(round(0.1 * i, 1) for i in range(11))
ALPHA = 0.05


@dataclass
class Cell:
    kappa: float
    mu: float
    tasks: int
    repeats: int
    coverage: float
    width: float
    zero_width: float
    old_coverage: float
    old_width: float
    old_zero_width: float
    floor: float              # valid_floor: least coverage of any valid interval here
    exact: bool = False       # enumerated (exact) rather than simulated
    scan: tuple[float, ...] = ()   # coverage at each of PENALTIES (repeats > 1), same runs


def draw(rng: np.random.Generator, sims: int, tasks: int, repeats: int, mu: float,
         kappa: float) -> tuple[np.ndarray, np.ndarray]:
    """(task probabilities, per-task success counts), each (sims, tasks)."""
    p = rng.beta(mu * kappa, (1 - mu) * kappa, size=(sims, tasks))
    return p, rng.binomial(repeats, p)


EXACT_MAX = 60000           # designs with at most this many distinct runs are enumerated, not sampled


@functools.lru_cache(maxsize=8)
def distinct_runs(tasks: int, repeats: int) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct run of the design (per-task success counts, tasks unordered: one row
    each) and the log of the number of task orders that give it. Cached: the ten cells of a
    design, and every ICC of `least_valid_coverage`, share it."""
    k = np.array(list(itertools.combinations_with_replacement(range(repeats + 1), tasks)), dtype=int)
    tally = np.stack([(k == v).sum(1) for v in range(repeats + 1)], 1)
    k.flags.writeable = False
    return k, gammaln(tasks + 1) - gammaln(tally + 1).sum(1)


def exact_runs(tasks: int, repeats: int, mu: float, kappa: float) -> tuple[np.ndarray, np.ndarray] | None:
    """`distinct_runs` with each run's exact probability under the cell's beta-binomial
    (binomial for kappa = inf); None when there are more than EXACT_MAX."""
    if math.comb(tasks + repeats, repeats) > EXACT_MAX:
        return None
    k, log_orders = distinct_runs(tasks, repeats)
    log_pmf = (sst.betabinom.logpmf(np.arange(repeats + 1), repeats, mu * kappa, (1 - mu) * kappa)
               if np.isfinite(kappa) else sst.binom.logpmf(np.arange(repeats + 1), repeats, mu))   # ICC 0
    return k, np.exp(log_orders + log_pmf[k].sum(1))


def proportion_cell(rng: np.random.Generator, sims: int, tasks: int, repeats: int, mu: float,
                    kappa: float, scan: bool = True) -> Cell:
    """Coverage and width of one cell: exact (every distinct run, weighted by its probability)
    where the design has at most EXACT_MAX distinct runs, else over `sims` simulated runs."""
    enumerated = exact_runs(tasks, repeats, mu, kappa)
    if enumerated is None:
        _, k = draw(rng, sims, tasks, repeats, mu, kappa)
        w = np.full(sims, 1 / sims)
    else:
        k, w = enumerated
    rates = k / repeats
    counts = np.full_like(rates, float(repeats))
    _, lo, hi = iv.korn_graubard(rates, counts)
    _, olo, ohi = iv.t_interval_clipped(rates)
    covered = []
    for g in PENALTIES if scan and repeats > 1 else ():
        _, glo, ghi = iv.korn_graubard(rates, counts, penalty=g)
        covered.append(float(w @ ((glo <= mu) & (mu <= ghi))))
    return Cell(kappa, mu, tasks, repeats,
                coverage=float(w @ ((lo <= mu) & (mu <= hi))), width=float(w @ (hi - lo)),
                zero_width=float(w @ (hi - lo < 1e-12)),
                old_coverage=float(w @ ((olo <= mu) & (mu <= ohi))), old_width=float(w @ (ohi - olo)),
                old_zero_width=float(w @ (ohi - olo < 1e-12)),
                floor=valid_floor(tasks, repeats, mu, kappa), exact=enumerated is not None,
                scan=tuple(covered))


def proportion_grid(sims: int, seed: int = 20261201, tasks=TASKS, repeats=REPEATS, means=MEANS,
                    kappas=KAPPAS, scan: bool = True) -> list[Cell]:
    rng = np.random.default_rng(seed)
    return [proportion_cell(rng, sims, t, r, mu, kappa, scan)
            for kappa, mu, t, r in itertools.product(kappas, means, tasks, repeats)]


# --------------------------------------------------------------------------- beyond the grid

# Heterogeneity the grid does not reach: a build that decodes greedily repeats itself, so
# its repeats of a task nearly always agree (ICC 0.9 in the beta family), and task probabilities
# that are not beta at all (logit-normal, location solved for the mean).
FAMILIES = (("beta", 1 / 9), ("logit-normal", 1.0), ("logit-normal", 3.0))
BEYOND_TASKS = (5, 8, 20, 60)
BEYOND_REPEATS = (3, 10)


@dataclass
class BeyondCell:
    family: str
    spread: float             # beta: kappa (ICC 1 / (1 + kappa)); logit-normal: sigma
    mu: float
    tasks: int
    repeats: int
    coverage: float
    width: float


def logit_location(mu: float, sigma: float) -> float:
    """m with E[expit(N(m, sigma^2))] = mu (Gauss-Hermite quadrature)."""
    x, w = np.polynomial.hermite_e.hermegauss(96)
    w = w / w.sum()
    return float(brentq(lambda m: float(w @ expit(m + sigma * x)) - mu, -40, 40))


def task_probabilities(rng: np.random.Generator, family: str, spread: float, mu: float, size) -> np.ndarray:
    if family == "beta":
        return rng.beta(mu * spread, (1 - mu) * spread, size=size)
    return expit(rng.normal(logit_location(mu, spread), spread, size=size))


def beyond_grid(sims: int, seed: int = 20261204) -> list[BeyondCell]:
    rng = np.random.default_rng(seed)
    cells = []
    for (family, spread), mu, t, r in itertools.product(FAMILIES, MEANS, BEYOND_TASKS, BEYOND_REPEATS):
        rates = rng.binomial(r, task_probabilities(rng, family, spread, mu, (sims, t))) / r
        _, lo, hi = iv.korn_graubard(rates, np.full_like(rates, float(r)))
        cells.append(BeyondCell(family, spread, mu, t, r, coverage=float(np.mean((lo <= mu) & (mu <= hi))),
                                width=float(np.mean(hi - lo))))
    return cells


# --------------------------------------------------------------------------- correlated instances

INSTANCE_TASKS = (5, 10, 20, 46)
INSTANCES = (2, 4)
INSTANCE_REPEATS = (1, 3)
INSTANCE_MEANS = (0.1, 0.5, 0.9)
WITHIN = (0.5, 0.9)
INSTANCE_DELTA = 0.05


@dataclass
class InstanceCell:
    kappa: float
    mu: float
    tasks: int
    instances: int             # task instances per task
    repeats: int
    within: float              # chance an instance shares its task's probability
    coverage: float            # a task's instances pooled (the report)
    width: float
    unit_coverage: float       # each instance its own unit (the previous report)
    unit_width: float
    pair_coverage: float       # the paired difference, pooled by task / per instance
    pair_unit_coverage: float


def instance_probabilities(rng: np.random.Generator, sims: int, tasks: int, instances: int, mu: float,
                           kappa: float, within: float) -> np.ndarray:
    """(sims, tasks, instances) success probabilities; each has the Beta(mu, kappa) marginal."""
    a, b = mu * kappa, (1 - mu) * kappa
    own = rng.beta(a, b, size=(sims, tasks, 1))
    fresh = rng.beta(a, b, size=(sims, tasks, instances))
    return np.where(rng.random((sims, tasks, instances)) < within, own, fresh)


def _covers(lo: np.ndarray, hi: np.ndarray, truth: float) -> float:
    return float(np.mean((lo <= truth + 1e-12) & (truth - 1e-12 <= hi)))


def instance_cell(rng: np.random.Generator, sims: int, tasks: int, instances: int, repeats: int, mu: float,
                  kappa: float, within: float, delta: float = INSTANCE_DELTA) -> InstanceCell:
    pa = instance_probabilities(rng, sims, tasks, instances, mu, kappa, within)
    xa = rng.binomial(repeats, pa)
    xb = rng.binomial(repeats, pa * (1 - delta / mu))
    pooled, per = float(instances * repeats), float(repeats)
    ta, tb = xa.sum(-1) / pooled, xb.sum(-1) / pooled            # per task, instances pooled
    ua, ub = xa.reshape(sims, -1) / per, xb.reshape(sims, -1) / per
    _, lo, hi = iv.korn_graubard(ta, np.full_like(ta, pooled))
    _, ulo, uhi = iv.korn_graubard(ua, np.full_like(ua, per))
    _, dlo, dhi = iv.mover_difference(ta, np.full_like(ta, pooled), tb, np.full_like(tb, pooled))
    _, udlo, udhi = iv.mover_difference(ua, np.full_like(ua, per), ub, np.full_like(ub, per))
    return InstanceCell(kappa, mu, tasks, instances, repeats, within,
                        coverage=_covers(lo, hi, mu), width=float(np.mean(hi - lo)),
                        unit_coverage=_covers(ulo, uhi, mu), unit_width=float(np.mean(uhi - ulo)),
                        pair_coverage=_covers(dlo, dhi, -delta), pair_unit_coverage=_covers(udlo, udhi, -delta))


def instance_grid(sims: int, seed: int = 20261205) -> list[InstanceCell]:
    rng = np.random.default_rng(seed)
    return [instance_cell(rng, sims, t, m, r, mu, kappa, w)
            for kappa, w, mu, t, m, r in itertools.product(KAPPAS, WITHIN, INSTANCE_MEANS, INSTANCE_TASKS,
                                                          INSTANCES, INSTANCE_REPEATS)]


def print_instances(cells: list[InstanceCell]) -> None:
    if not cells:
        return
    print("\nCorrelated instances: coverage % of the rate and of the paired difference (delta 0.05),"
          " a task's instances pooled (the report) vs each instance its own unit (before)")
    print("  ICC  within mean tasks  m R | rate: pooled  per-instance | difference: pooled  per-instance")
    for c in cells:
        print(f"  {1 / (1 + c.kappa):4.2f} {c.within:5.2f} {c.mu:4.2f} {c.tasks:5d} {c.instances:2d} {c.repeats:1d} |"
              f"       {_pct(c.coverage)}         {_pct(c.unit_coverage)} |"
              f"             {_pct(c.pair_coverage)}         {_pct(c.pair_unit_coverage)}")


# --------------------------------------------------------------------------- balanced recognition

DETECTOR_TASKS = (5, 20, 60)
DETECTOR_REPEATS = (1, 3)
DETECTOR_MEANS = ((0.5, 0.5), (0.9, 0.9), (0.2, 0.9))      # (sensitivity, specificity)
DETECTOR_CORR = (-0.8, 0.0, 0.8)
DETECTOR_KAPPA = 1.0                                         # ICC 0.5
VERIFY_SHARE = 0.6                                           # tasks with a verify variant (59 of 93 shipped)


@dataclass
class DetectorCell:
    tasks: int                 # every task has base variants (specificity); a share has verify ones
    verify_tasks: int
    repeats: int
    sensitivity: float         # the population means
    specificity: float
    corr: float                # correlation of a task's two probabilities (Gaussian copula)
    coverage: float            # of (sensitivity + specificity) / 2 by the report's balanced interval
    low_miss: float            # its lower limit above the truth
    high_miss: float
    width: float
    sens_coverage: float
    spec_coverage: float


def detector_probabilities(rng: np.random.Generator, sims: int, tasks: int, mus: tuple[float, float],
                           kappa: float, corr: float) -> tuple[np.ndarray, np.ndarray]:
    """(sims, tasks) sensitivity and specificity probabilities per task, Beta(mu, kappa) marginals
    joined by a Gaussian copula: a task where the model says "done" readily may be one where it
    is both sensitive and unspecific (corr < 0), or one it reads well either way (corr > 0)."""
    z1 = rng.standard_normal((sims, tasks))
    z2 = corr * z1 + math.sqrt(1 - corr * corr) * rng.standard_normal((sims, tasks))
    return tuple(sst.beta.ppf(sst.norm.cdf(z), mu * kappa, (1 - mu) * kappa) for z, mu in zip((z1, z2), mus))


def detector_cell(rng: np.random.Generator, sims: int, tasks: int, repeats: int, mus: tuple[float, float],
                  corr: float, kappa: float = DETECTOR_KAPPA) -> DetectorCell:
    from agent_host.report.detector import balanced_limits
    verify = max(2, round(VERIFY_SHARE * tasks))
    ps, pc = detector_probabilities(rng, sims, tasks, mus, kappa, corr)
    xs = rng.binomial(repeats, ps[:, :verify]) / repeats           # verify variants: the first tasks
    xc = rng.binomial(repeats, pc) / repeats                       # base variants: every task
    sens = iv.korn_graubard(xs, np.full_like(xs, float(repeats)))
    spec = iv.korn_graubard(xc, np.full_like(xc, float(repeats)))
    _, lo, hi = balanced_limits(sens, spec)
    truth = sum(mus) / 2
    return DetectorCell(tasks, verify, repeats, mus[0], mus[1], corr, coverage=_covers(lo, hi, truth),
                        low_miss=float(np.mean(lo > truth + 1e-12)), high_miss=float(np.mean(hi < truth - 1e-12)),
                        width=float(np.mean(hi - lo)), sens_coverage=_covers(sens[1], sens[2], mus[0]),
                        spec_coverage=_covers(spec[1], spec[2], mus[1]))


def detector_grid(sims: int, seed: int = 20261206, tasks=DETECTOR_TASKS, repeats=DETECTOR_REPEATS,
                  means=DETECTOR_MEANS, corrs=DETECTOR_CORR) -> list[DetectorCell]:
    rng = np.random.default_rng(seed)
    return [detector_cell(rng, sims, t, r, m, c) for m, c, t, r in itertools.product(means, corrs, tasks, repeats)]


def print_detector(cells: list[DetectorCell]) -> None:
    if not cells:
        return
    print("\nBalanced recognition, (sensitivity + specificity) / 2 with the mean of the two intervals' limits:"
          " coverage % (lower / upper limit missing), mean width; each side's own coverage")
    print("  sens spec  corr tasks verify R | balanced  low-miss high-miss width | sens    spec")
    for c in cells:
        print(f"  {c.sensitivity:4.2f} {c.specificity:4.2f} {c.corr:5.1f} {c.tasks:5d} {c.verify_tasks:6d} {c.repeats:1d} |"
              f"   {_pct(c.coverage)}    {_pct(c.low_miss)}    {_pct(c.high_miss)} {100 * c.width:5.1f} |"
              f" {_pct(c.sens_coverage)}  {_pct(c.spec_coverage)}")


# --------------------------------------------------------------------------- paired builds

def paired_draw(rng: np.random.Generator, sims: int, tasks: int, repeats: int, mu: float, kappa: float,
                delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-episode successes (sims, tasks, repeats) of baseline A and build B = A degraded by delta."""
    pa = rng.beta(mu * kappa, (1 - mu) * kappa, size=(sims, tasks))
    pb = pa * (1 - delta / mu)
    a = rng.random((sims, tasks, repeats)) < pa[..., None]
    b = rng.random((sims, tasks, repeats)) < pb[..., None]
    return a, b


def sign_flip_p(d: np.ndarray, rng: np.random.Generator, draws: int = 2000) -> np.ndarray:
    """Two-sided sign-flip p values of the rows of d (sims, tasks), statistic |sum|: every sign
    pattern when tasks <= 12 (as the report: exact), else `draws` random patterns."""
    sims, t = d.shape
    obs = np.abs(d.sum(-1))
    tol = 1e-9
    if t <= 12:
        idx = np.arange(1 << t)
        signs = ((idx[:, None] >> np.arange(t)) & 1) * 2 - 1          # (patterns, t)
        stat = np.abs(d @ signs.T)                                   # (sims, patterns)
        return (stat >= obs[:, None] - tol).mean(-1)
    hits = np.zeros(sims)
    for _ in range(draws // 500):
        signs = rng.integers(0, 2, size=(500, t)) * 2 - 1
        hits += (np.abs(d @ signs.T) >= obs[:, None] - tol).sum(-1)
    return (hits + 1) / (draws // 500 * 500 + 1)


def mcnemar_p(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact McNemar (two-sided binomial on discordant pairs, as the report) per simulated run."""
    ab = (a & ~b).sum(axis=(1, 2))
    ba = (~a & b).sum(axis=(1, 2))
    n = ab + ba
    p = np.minimum(1.0, 2 * sst.binom.cdf(np.minimum(ab, ba), np.maximum(n, 1), 0.5))
    return np.where(n > 0, p, 1.0)


@dataclass
class PairCell:
    kappa: float
    mu: float
    tasks: int
    repeats: int
    delta: float
    coverage: float
    width: float
    old_coverage: float
    old_width: float
    sign_flip_reject: float
    mcnemar_reject: float
    narrow: float = 0.0        # share of difference intervals under 1 pp wide (MOVER)
    old_narrow: float = 0.0


def paired_cell(rng: np.random.Generator, sims: int, tasks: int, repeats: int, mu: float, kappa: float,
                delta: float) -> PairCell:
    a, b = paired_draw(rng, sims, tasks, repeats, mu, kappa, delta)
    ra, rb = a.mean(-1), b.mean(-1)
    c = np.full_like(ra, float(repeats))
    _, lo, hi = iv.mover_difference(ra, c, rb, c)
    _, olo, ohi = iv.t_interval_clipped(rb - ra, bounds=(-1.0, 1.0))
    truth = -delta
    return PairCell(kappa, mu, tasks, repeats, delta,
                    coverage=_covers(lo, hi, truth),
                    width=float(np.mean(hi - lo)),
                    old_coverage=_covers(olo, ohi, truth),
                    old_width=float(np.mean(ohi - olo)),
                    narrow=float(np.mean(hi - lo < NARROW)), old_narrow=float(np.mean(ohi - olo < NARROW)),
                    sign_flip_reject=float(np.mean(sign_flip_p(rb - ra, rng) <= ALPHA)),
                    mcnemar_reject=float(np.mean(mcnemar_p(a, b) <= ALPHA)))


def paired_grid(sims: int, seed: int = 20261202, tasks=(5, 8, 20, 60), repeats=(1, 3, 10),
                means=(0.1, 0.5, 0.9), kappas=KAPPAS, deltas=(0.0, 0.05)) -> list[PairCell]:
    rng = np.random.default_rng(seed)
    return [paired_cell(rng, sims, t, r, mu, kappa, d)
            for kappa, mu, t, r, d in itertools.product(kappas, means, tasks, repeats, deltas)]


def power_table(sims: int, seed: int = 20261203) -> list[PairCell]:
    rng = np.random.default_rng(seed)
    return [paired_cell(rng, sims, t, r, 0.5, 1.0 if het else 9.0, d)
            for t, r in ((8, 3), (20, 3), (20, 10), (60, 3)) for het in (False, True)
            for d in (0.1, 0.2, 0.3)]


# --------------------------------------------------------------------------- printing

def _pct(x: float) -> str:
    return f"{100 * x:5.1f}"


def print_proportions(cells: list[Cell]) -> None:
    print("Per-build rate intervals: coverage % / mean width (pp), new (Korn-Graubard) vs old (t over tasks)")
    for kappa in KAPPAS:
        print(f"\n  heterogeneity kappa={kappa:g} (ICC {1 / (1 + kappa):.2f})")
        print("  mean  tasks | " + " | ".join(f"R={r:<2d}   new          old       " for r in REPEATS))
        for mu in MEANS:
            for t in TASKS:
                row = [c for c in cells if c.kappa == kappa and c.mu == mu and c.tasks == t]
                if not row:
                    continue
                parts = [f"{_pct(c.coverage)} /{100 * c.width:5.1f}   {_pct(c.old_coverage)} /{100 * c.old_width:5.1f}"
                         for c in sorted(row, key=lambda c: c.repeats)]
                print(f"  {mu:4.2f} {t:5d}  | " + " | ".join(parts))


def print_beyond(cells: list[BeyondCell]) -> None:
    if not cells:
        return
    print("\nBeyond the grid: coverage % / mean width (pp); beta at ICC 0.9 (kappa 1/9), logit-normal sigma 1 and 3")
    for family, spread in FAMILIES:
        label = f"beta ICC {1 / (1 + spread):.1f}" if family == "beta" else f"logit-normal sigma {spread:g}"
        print(f"\n  {label}")
        print("  mean  tasks | " + " | ".join(f"R={r:<2d}        " for r in BEYOND_REPEATS))
        for mu in MEANS:
            for t in BEYOND_TASKS:
                row = sorted((c for c in cells if (c.family, c.spread, c.mu, c.tasks) == (family, spread, mu, t)),
                             key=lambda c: c.repeats)
                print(f"  {mu:4.2f} {t:5d}  | " + " | ".join(f"{_pct(c.coverage)} /{100 * c.width:5.1f}" for c in row))


def design_cells(c: Cell, cells: list[Cell]) -> list[Cell]:
    return [d for d in cells if d.tasks == c.tasks and d.repeats == c.repeats]


def best_under_floor(c: Cell, cells: list[Cell]) -> tuple[float, float] | None:
    """(lowest coverage of c, at which penalty) over the penalties that keep every cell of c's
    design at FLOOR or more; None without a scan or when no penalty does."""
    design = design_cells(c, cells)
    if not c.scan or any(len(d.scan) != len(PENALTIES) for d in design):
        return None
    ok = [i for i in range(len(PENALTIES)) if all(d.scan[i] >= FLOOR for d in design)]
    if not ok:
        return None
    i = min(ok, key=lambda i: c.scan[i])
    return c.scan[i], PENALTIES[i]


def tradeoff_reason(c: Cell, cells: list[Cell]) -> str | None:
    """Why c stays over CEILING whatever the df penalty, if the scan shows it: the interval sees
    the design, not the mean or the heterogeneity, so its penalty must hold FLOOR at all ten
    cells of the design at once."""
    best = best_under_floor(c, cells)
    if best is None or best[0] <= CEILING:
        return None
    return (f"trade-off: no df penalty keeps all {len(design_cells(c, cells))} cells of {c.tasks} x {c.repeats}"
            f" at {100 * FLOOR:.0f}% and this one at {100 * CEILING:.1f}% (at best {_pct(best[0])}%, penalty {best[1]:g})")


def print_tradeoff(cells: list[Cell]) -> None:
    """Per design with a cell over 97.5% not forced by few episodes: the design's lowest coverage
    and those cells' coverage at each df penalty exponent."""
    high = [c for c in cells if c.coverage > CEILING and forced_reason(c) is None and c.scan]
    designs = sorted({(c.tasks, c.repeats) for c in high})
    if not designs:
        return
    print("\nTrade-off scan: coverage % against a fixed exponent of the df penalty (1 = Korn-Graubard's)")
    print("  design   exponent: " + " ".join(f"{g:5.1f}" for g in PENALTIES))
    for t, r in designs:
        design = [c for c in cells if (c.tasks, c.repeats) == (t, r)]
        print(f"  {t:3d} x {r:2d}  lowest: " + " ".join(_pct(min(d.scan[i] for d in design)) for i in range(len(PENALTIES))))
        for c in (c for c in high if (c.tasks, c.repeats) == (t, r)):
            print(f"    ICC {1 / (1 + c.kappa):.1f} mean {c.mu:4.2f}: " + " ".join(_pct(x) for x in c.scan))


def valid_floor(tasks: int, repeats: int, mu: float, kappa: float, alpha: float = ALPHA) -> float:
    """The least coverage in this cell of any equal-tailed interval (each limit a one-sided
    1 - alpha/2 bound) that is valid at every heterogeneity and monotone (more successes never
    lower a limit). Exact, no simulation.

    Valid at the all-or-nothing end (every task succeeds always or never, the ICC -> 1 limit of
    the Beta family) and monotone, the upper limit of any run is at least Clopper-Pearson's
    upper limit over tasks for its K tasks that succeeded every time (the run dominates the
    all-or-nothing run of K successes, whose limit must be at least that), so the upper limit
    misses at most when that bound is below mu; the same for the lower limit with the tasks
    that ever succeeded. K is binomial(tasks, P(a task succeeds in all its repeats)) under the
    cell's Beta(mu kappa, (1 - mu) kappa). Where a tail can miss at most b < alpha/2, the
    coverage is at least 1 - b - alpha/2."""
    never, every = sst.betabinom.pmf([0, repeats], repeats, mu * kappa, (1 - mu) * kappa)
    k = np.arange(tasks + 1)
    lo, hi = iv.clopper_pearson(k, np.full(k.shape, tasks), alpha)
    up_miss = float(sst.binom.pmf(k, tasks, every)[hi < mu].sum())
    lo_miss = float(sst.binom.pmf(k, tasks, 1 - never)[lo > mu].sum())
    return 1 - min(alpha / 2, up_miss) - min(alpha / 2, lo_miss)


MILP_RHOS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)


def least_valid_coverage(tasks: int, repeats: int, mu: float, kappa: float, alpha: float = ALPHA) -> float | None:
    """A lower bound, sharper than `valid_floor`, on the coverage in this cell of any equal-tailed,
    monotone interval valid at every heterogeneity: over the design's distinct runs, the largest
    probability (at the cell's ICC) of a set of runs closed upwards (more successes) that has
    probability at most alpha/2 at every ICC of MILP_RHOS and at the all-or-nothing end: a
    mixed-integer program (scipy's HiGHS). Such a set is where a lower limit may exceed mu; the
    same downwards for the upper limit. Validity is asked at this mu only, so the bound may be
    below what an interval valid at every mean can reach. None when the design is too large."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    runs = exact_runs(tasks, repeats, mu, kappa)
    if runs is None:
        return None
    k, target = runs
    index = {tuple(r): i for i, r in enumerate(k.tolist())}
    edges = [(i, index[tuple(sorted(r[:j] + [r[j] + 1] + r[j + 1:]))])
             for i, r in enumerate(k.tolist()) for j in range(tasks) if r[j] < repeats]
    a = coo_matrix((np.r_[np.ones(len(edges)), -np.ones(len(edges))],
                    (np.r_[np.arange(len(edges)), np.arange(len(edges))],
                     np.r_[[e[0] for e in edges], [e[1] for e in edges]])), shape=(len(edges), len(k))).tocsr()
    levels = [exact_runs(tasks, repeats, mu, 1 / rho - 1 if rho > 0 else np.inf)[1] for rho in MILP_RHOS]
    ends = (k == 0) | (k == repeats)
    aon = np.where(ends.all(1), sst.binom.pmf((k == repeats).sum(1), tasks, mu), 0.0)
    p = np.vstack(levels + [aon])
    missed = 0.0
    for sign in (1, -1):            # closed upwards (lower limit above mu), then downwards
        res = milp(-target, integrality=np.ones(len(k)), bounds=Bounds(0, 1),
                   constraints=[LinearConstraint(sign * a, -np.inf, 0), LinearConstraint(p, -np.inf, alpha / 2)])
        missed += -res.fun if res.success else alpha / 2
    return 1 - missed


def forced_reason(c: Cell) -> str | None:
    """Why every valid interval covers at least 97.5% in cell c, if it does (`valid_floor`)."""
    if c.floor < CEILING - 1e-12:
        return None
    side = "both limits" if c.floor > 1 - 1e-12 else "one limit"
    return (f"forced: {side} of any valid interval cannot miss, least coverage {_pct(c.floor)}%"
            f" ({c.tasks} tasks could be all-or-nothing)")


def summarise(cells: list[Cell]) -> dict:
    worst = min(cells, key=lambda c: c.coverage)
    worst_old = min(cells, key=lambda c: c.old_coverage)
    high = [c for c in cells if c.coverage > CEILING]
    forced = [c for c in high if forced_reason(c) is not None]
    traded = [c for c in high if forced_reason(c) is None and tradeoff_reason(c, cells) is not None]
    return {
        "cells": len(cells),
        "new_worst": {"cell": (worst.kappa, worst.mu, worst.tasks, worst.repeats), "coverage": worst.coverage,
                      "width": worst.width},
        "old_worst": {"cell": (worst_old.kappa, worst_old.mu, worst_old.tasks, worst_old.repeats),
                      "coverage": worst_old.old_coverage, "width": worst_old.old_width,
                      "zero_width": worst_old.old_zero_width},
        "below_floor": [asdict(c) for c in cells if c.coverage < FLOOR],
        "above_ceiling": len(high),
        "above_ceiling_forced": len(forced),
        "above_ceiling_tradeoff": len(traded),
        "above_ceiling_method": len(high) - len(forced) - len(traded),
        "any_zero_width": any(c.zero_width > 0 for c in cells),
        "mean_width_new": float(np.mean([c.width for c in cells])),
        "mean_width_old": float(np.mean([c.old_width for c in cells])),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=10000, help="simulated runs per grid cell too large to enumerate (default 10000)")
    ap.add_argument("--pair-sims", type=int, default=4000, help="simulated run pairs per paired cell (default 4000)")
    ap.add_argument("--seed", type=int, default=20261201, help="seed of the proportion grid (default 20261201)")
    ap.add_argument("--beyond-sims", type=int, default=4000,
                    help="runs per cell beyond the grid (ICC 0.9; logit-normal tasks); 0 skips (default 4000)")
    ap.add_argument("--instance-sims", type=int, default=4000,
                    help="runs per cell of the correlated-instances check; 0 skips (default 4000)")
    ap.add_argument("--detector-sims", type=int, default=4000,
                    help="runs per cell of the balanced-recognition check; 0 skips (default 4000)")
    ap.add_argument("--json", action="store_true", help="print the cells and the summary as JSON")
    ap.add_argument("--no-scan", action="store_true", help="skip the df-penalty trade-off scan (faster)")
    ap.add_argument("--penalty", default=None, help="df-penalty exponent of the report's interval, or 'calibrated'")
    args = ap.parse_args(argv)
    if args.penalty is not None:
        iv.PENALTY = args.penalty if args.penalty == "calibrated" else float(args.penalty)
    t0 = time.monotonic()
    cells = proportion_grid(args.sims, args.seed, scan=not args.no_scan)
    pairs = paired_grid(args.pair_sims)
    power = power_table(args.pair_sims)
    beyond = beyond_grid(args.beyond_sims) if args.beyond_sims > 0 else []
    inst = instance_grid(args.instance_sims) if args.instance_sims > 0 else []
    det = detector_grid(args.detector_sims) if args.detector_sims > 0 else []
    summary = summarise(cells)
    if det:
        summary["detector"] = {"cells": len(det), "worst": asdict(min(det, key=lambda c: c.coverage)),
                               "mean_width": float(np.mean([c.width for c in det])),
                               "below_floor": [asdict(c) for c in det if c.coverage < FLOOR]}
    if inst:
        summary["instances"] = {
            "cells": len(inst),
            "worst": asdict(min(inst, key=lambda c: c.coverage)),
            "worst_per_instance": asdict(min(inst, key=lambda c: c.unit_coverage)),
            "worst_pair": asdict(min(inst, key=lambda c: c.pair_coverage)),
            "worst_pair_per_instance": asdict(min(inst, key=lambda c: c.pair_unit_coverage)),
            "below_floor": [asdict(c) for c in inst if min(c.coverage, c.pair_coverage) < FLOOR]}
    if beyond:
        worst_b = min(beyond, key=lambda c: c.coverage)
        summary["beyond"] = {"cells": len(beyond), "worst": asdict(worst_b),
                             "below_floor": [asdict(c) for c in beyond if c.coverage < FLOOR]}
    nulls = [p for p in pairs if p.delta == 0]
    summary["pairs"] = {
        "worst_coverage_new": min(p.coverage for p in pairs), "worst_coverage_old": min(p.old_coverage for p in pairs),
        "mean_width_new": float(np.mean([p.width for p in pairs])),
        "mean_width_old": float(np.mean([p.old_width for p in pairs])),
        "type1_sign_flip_max": max(p.sign_flip_reject for p in nulls),
        "type1_mcnemar_max": max(p.mcnemar_reject for p in nulls),
        "narrow_max_new": max(p.narrow for p in pairs), "narrow_max_old": max(p.old_narrow for p in pairs),
    }
    summary["seconds"] = time.monotonic() - t0
    if args.json:
        print(json.dumps({"summary": summary, "cells": [asdict(c) for c in cells],
                          "pairs": [asdict(p) for p in pairs], "power": [asdict(p) for p in power],
                          "beyond": [asdict(c) for c in beyond], "instances": [asdict(c) for c in inst],
                          "detector": [asdict(c) for c in det]}, indent=1))
        return exit_code(summary)
    print_proportions(cells)
    print("\nCells over 97.5% (new method): forced (any valid interval covers 97.5% or more there), by the trade-off, or by the method:")
    for c in sorted((c for c in cells if c.coverage > CEILING),
                    key=lambda c: (forced_reason(c) is None, tradeoff_reason(c, cells) is None, -c.floor)):
        why = forced_reason(c) or tradeoff_reason(c, cells)
        if why is None:
            best = best_under_floor(c, cells)
            least = least_valid_coverage(c.tasks, c.repeats, c.mu, c.kappa)
            why = ("method" + (f" (a penalty of {best[1]:g} for this design would give {_pct(best[0])}%)" if best else "")
                   + (f"; a valid interval could cover as little as {_pct(least)}%" if least is not None else ""))
        print(f"  kappa={c.kappa:g} mean={c.mu} tasks={c.tasks} repeats={c.repeats}: {100 * c.coverage:6.2f}%"
              f" width {100 * c.width:.1f} pp  ({why}; {c.tasks * c.repeats} episodes,"
              f" {'exact' if c.exact else 'simulated'})")
    print("  (least coverage of any valid interval: each limit a 97.5% one-sided bound at every heterogeneity,"
          " more successes never lowering a limit; see valid_floor)")
    print_tradeoff(cells)
    print_beyond(beyond)
    print_instances(inst)
    print_detector(det)
    print("\nBuild vs build (paired): coverage % / mean width (pp) of the difference; rejections at alpha 5%")
    print("  kappa mean tasks R  delta |  new (MOVER)     old (paired t) | sign-flip  McNemar")
    for p in pairs:
        print(f"  {p.kappa:4g} {p.mu:4.2f} {p.tasks:5d} {p.repeats:2d} {p.delta:5.2f} | {_pct(p.coverage)} /{100 * p.width:5.1f}"
              f"   {_pct(p.old_coverage)} /{100 * p.old_width:5.1f} | {_pct(p.sign_flip_reject)}     {_pct(p.mcnemar_reject)}")
    print("\nPower at alpha 5% (baseline mean 0.5; build B = A degraded by delta):")
    print("  tasks R  ICC   delta | sign-flip  McNemar")
    for p in power:
        print(f"  {p.tasks:5d} {p.repeats:2d} {1 / (1 + p.kappa):4.2f}  {p.delta:5.2f} | {_pct(p.sign_flip_reject)}     "
              f"{_pct(p.mcnemar_reject)}")
    s = summary
    print(f"\nWorst cell, new: coverage {_pct(s['new_worst']['coverage'])}% width {100 * s['new_worst']['width']:.1f} pp"
          f" at (kappa, mean, tasks, repeats) = {s['new_worst']['cell']}")
    print(f"Worst cell, old: coverage {_pct(s['old_worst']['coverage'])}% width {100 * s['old_worst']['width']:.1f} pp"
          f" ({_pct(s['old_worst']['zero_width'])}% zero width) at {s['old_worst']['cell']}")
    print(f"Cells below 93%: {len(s['below_floor'])}; over 97.5%: {s['above_ceiling']} of {s['cells']}"
          f" ({s['above_ceiling_forced']} forced, {s['above_ceiling_tradeoff']} by the trade-off,"
          f" {s['above_ceiling_method']} by the method);"
          f" zero-width intervals: {'some' if s['any_zero_width'] else 'none'}")
    print(f"Cells computed exactly: {sum(c.exact for c in cells)} of {len(cells)} (the others simulated)")
    print(f"Mean width over the grid: new {100 * s['mean_width_new']:.1f} pp, old {100 * s['mean_width_old']:.1f} pp")
    pr = s["pairs"]
    print(f"Paired: worst coverage new {_pct(pr['worst_coverage_new'])}%, old {_pct(pr['worst_coverage_old'])}%;"
          f" mean width new {100 * pr['mean_width_new']:.1f} pp, old {100 * pr['mean_width_old']:.1f} pp")
    print(f"Paired intervals under {100 * NARROW:.0f} pp wide (most in any cell): new {_pct(pr['narrow_max_new'])}% of runs,"
          f" old {_pct(pr['narrow_max_old'])}%")
    print(f"Type I error (max over null cells): sign-flip {_pct(pr['type1_sign_flip_max'])}%,"
          f" McNemar {_pct(pr['type1_mcnemar_max'])}%")
    if beyond:
        b = s["beyond"]["worst"]
        print(f"Beyond the grid: worst coverage {_pct(b['coverage'])}% ({b['family']} {b['spread']:.3g}, mean {b['mu']},"
              f" {b['tasks']} x {b['repeats']}); cells below 93%: {len(s['beyond']['below_floor'])} of {len(beyond)}")
    if inst:
        i = s["instances"]
        print(f"Correlated instances: worst coverage pooled by task {_pct(i['worst']['coverage'])}%, per instance"
              f" {_pct(i['worst_per_instance']['unit_coverage'])}%; difference pooled {_pct(i['worst_pair']['pair_coverage'])}%,"
              f" per instance {_pct(i['worst_pair_per_instance']['pair_unit_coverage'])}%;"
              f" cells below 93% (pooled): {len(i['below_floor'])} of {i['cells']}")
    if det:
        d = s["detector"]["worst"]
        print(f"Balanced recognition: worst coverage {_pct(d['coverage'])}% (sensitivity {d['sensitivity']},"
              f" specificity {d['specificity']}, corr {d['corr']}, {d['tasks']} x {d['repeats']});"
              f" cells below 93%: {len(s['detector']['below_floor'])} of {s['detector']['cells']}")
    print(f"({s['seconds']:.0f} s)")
    return exit_code(s)


def exit_code(summary: dict) -> int:
    """1 when any cell, in the grid, beyond it or with correlated instances, is below 93%."""
    return 1 if (summary["below_floor"] or summary.get("beyond", {}).get("below_floor")
                 or summary.get("instances", {}).get("below_floor")
                 or summary.get("detector", {}).get("below_floor")) else 0


if __name__ == "__main__":
    sys.exit(main())
