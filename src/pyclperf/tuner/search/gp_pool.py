"""A Gaussian process over a fixed pool of candidate configurations, kept up to date one
evaluation at a time: the model behind strategy="auto" (search/auto.py).

Model: log-time as a Gaussian process with an ARD Matern-3/2 kernel (one length scale per
coordinate) on the coordinates the caller gives, in [0, 1] (auto.coordinates: each parameter's
value index, for some integer parameters their log and largest power-of-two divisor, and for
pairs of power-of-two parameters the log of their product), a signal variance and a noise
variance. Its hyperparameters maximise the marginal likelihood (SciPy's L-BFGS-B from where the
caller starts it, on a schedule the caller sets), times a log-normal prior on the length scales
where the caller gives one, or stay where the caller sets them (``condition``: auto's second,
fixed model); between fits a new observation extends the Cholesky factor by one
row, and with it V = L^-1 K(observed, pool), so the posterior mean and variance of every pool row
cost O(n N) per evaluation rather than a refit's O(n^2 N). No library keeps a posterior over a
candidate pool incrementally, which is what makes ranking every configuration of a 17k-space at
every step affordable (0.9 s per 100 evaluations of an 18k-configuration space, 0.4 s of a
4k one, on a 2-core EPYC guest): that is why this is written here.
Matern-3/2 rather than 5/2: neighbouring block sizes are far from smooth, and the rougher kernel
keeps more uncertainty between them (measured on the benchmark hub's spaces; 1/2 was worse).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

S3 = np.sqrt(3.0)


def _matern32(r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernel of squared scaled distance ``r2`` (unit variance), and -2 dk/d(r2)."""
    r = np.sqrt(np.maximum(r2, 0.0))
    e = np.exp(-S3 * r)
    return (1.0 + S3 * r) * e, 3.0 * e


def _matern32_only(r2: np.ndarray) -> np.ndarray:
    """The kernel alone, computed in ``r2``'s memory (which it overwrites): the same operations
    in the same order as ``_matern32``, so the same values, without its four temporaries the
    size of a pool row block (the pool rebuilds and extensions are most of a replay's time)."""
    np.maximum(r2, 0.0, out=r2)
    np.sqrt(r2, out=r2)
    r2 *= S3                                    # S3 * r
    e = np.negative(r2)
    np.exp(e, out=e)
    r2 += 1.0
    r2 *= e
    return r2


def _scale(y: np.ndarray) -> tuple[float, float]:
    """The mean and spread the targets ``y`` are standardised by."""
    return float(y.mean()), float(y.std()) + 1e-9


class PoolGP:
    """The posterior over every row of ``Z`` (the pool, N x D in [0, 1]) for up to ``cap``
    observations."""

    def __init__(self, Z: np.ndarray, cap: int, theta: np.ndarray | None = None,
                 prior: tuple[float, float] | None = None) -> None:
        self.Z = Z
        self.N, self.D = Z.shape
        self.cap = cap
        # (centre, width in log): a log-normal prior on each length scale, else none (the
        # fit then maximises the likelihood alone)
        self.prior = prior
        # log length scales, log signal variance, log noise variance
        self.theta = theta if theta is not None else np.r_[np.log(np.full(self.D, 0.5)), 0.0,
                                                           np.log(1e-3)]
        self.rows: list[int] = []

    def _nlml(self, th: np.ndarray, C: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Negative log marginal likelihood and its gradient (``C``: per-dimension squared
        distances between the observed rows)."""
        from scipy.linalg import cho_solve

        D = self.D
        w, sf2, sn2 = np.exp(-2 * th[:D]), np.exp(th[D]), np.exp(th[D + 1])
        K0, G0 = _matern32(np.tensordot(w, C, 1))
        n = len(y)
        try:
            L = np.linalg.cholesky(sf2 * K0 + (sn2 + 1e-8) * np.eye(n))
        except np.linalg.LinAlgError:
            return 1e10, np.zeros_like(th)
        a = cho_solve((L, True), y, check_finite=False)
        W = np.outer(a, a) - cho_solve((L, True), np.eye(n), check_finite=False)
        g = np.empty_like(th)
        g[:D] = -0.5 * np.tensordot(C, W * (sf2 * G0), ((1, 2), (0, 1))) * w
        g[D] = -0.5 * (W * sf2 * K0).sum()
        g[D + 1] = -0.5 * np.trace(W) * sn2
        f = 0.5 * y @ a + np.log(np.diag(L)).sum()
        if self.prior is not None:
            centre, width = self.prior
            z = (th[:D] - np.log(centre)) / width
            f += 0.5 * float((z * z).sum())
            g[:D] += z / width
        return f, g

    def refit(self, rows: Sequence[int], y: np.ndarray, maxiter: int = 50) -> None:
        """Fit the hyperparameters to the observations (pool ``rows``, targets ``y``; with a
        prior, its most probable ones) and rebuild the posterior over the pool."""
        from scipy.optimize import minimize

        mu, sd = _scale(y)
        ZI = self.Z[list(rows)]
        C = (ZI.T[:, :, None] - ZI.T[:, None, :]) ** 2
        bounds = [(np.log(0.05), np.log(30.0))] * self.D + [(np.log(0.05), np.log(20.0)),
                                                             (np.log(1e-6), np.log(0.3))]
        fit = minimize(self._nlml, self.theta, args=(C, (y - mu) / sd), jac=True,
                       method="L-BFGS-B", bounds=bounds, options={"maxiter": maxiter})
        if np.isfinite(fit.fun):
            self.theta = fit.x
        self.condition(rows, y)

    def condition(self, rows: Sequence[int], y: np.ndarray) -> None:
        """The posterior over the pool given the observations (pool ``rows``, targets ``y``),
        under the hyperparameters as they are: a fixed model's only fit."""
        from scipy.linalg.blas import dtrsm

        self.mu, self.sd = _scale(y)
        D = self.D
        self.sf2, self.sn2 = float(np.exp(self.theta[D])), float(np.exp(self.theta[D + 1]))
        self.F = self.Z * np.exp(-self.theta[:D])
        self.f2 = (self.F * self.F).sum(1)
        self.rows = list(rows)
        n = len(self.rows)
        self.V = np.empty((self.cap, self.N))
        KI = self._krow(self.rows, out=self.V[:n])
        self.L = np.zeros((self.cap, self.cap))
        self.L[:n, :n] = np.linalg.cholesky(KI[:, self.rows] + (self.sn2 + 1e-8) * np.eye(n))
        # V = L^-1 K, solved in V's own memory: its transpose is column-major, so BLAS's
        # triangular solve from the right (V^T L^T = K^T) needs no copy either way; a third of
        # the time of a solve from the left on a row-major K over an 18k pool
        solved = dtrsm(1.0, self.L[:n, :n], KI.T, side=1, lower=1, trans_a=1, overwrite_b=1)
        if not np.shares_memory(solved, KI):       # BLAS wrappers copy what they cannot reuse
            KI[:] = solved.T
        self.vv = (KI ** 2).sum(0)

    def _krow(self, rows: Sequence[int], out: np.ndarray | None = None) -> np.ndarray:
        """The kernel between ``rows`` and every pool row, written into ``out`` where given."""
        rows = list(rows)
        cross = self.F[rows] @ self.F.T
        cross *= 2.0                                # exact: the same as 2 * (F_r F^T)
        r2 = np.add(self.f2[rows][:, None], self.f2[None, :], out=out)
        r2 -= cross
        k = _matern32_only(r2)
        k *= self.sf2
        return k

    def add(self, i: int) -> None:
        """One more observation (pool row ``i``), the hyperparameters kept."""
        n = len(self.rows)
        k = self._krow([i])[0]
        lrow = self.V[:n, i].copy()
        lnn = np.sqrt(max(self.sf2 + self.sn2 + 1e-8 - lrow @ lrow, 1e-10))
        new = (k - lrow @ self.V[:n]) / lnn
        self.L[n, :n], self.L[n, n] = lrow, lnn
        self.V[n] = new
        self.vv += new * new
        self.rows.append(i)

    def predict(self, y: np.ndarray, rescale: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of every pool row, in the targets' units
        (``y``: the targets of the observations so far, in their order); ``rescale``: the
        targets standardised by their own mean and spread now, not those of the last fit."""
        from scipy.linalg import solve_triangular

        if rescale:
            self.mu, self.sd = _scale(y)
        n = len(self.rows)
        b = solve_triangular(self.L[:n, :n], (y - self.mu) / self.sd, lower=True,
                             check_finite=False)
        return (b @ self.V[:n]) * self.sd + self.mu, np.sqrt(np.maximum(self.sf2 - self.vv,
                                                                        1e-12)) * self.sd


def log_targets(values: Sequence[Any]) -> np.ndarray:
    """Log-times, a failed configuration (None) counted as the worst seen plus 0.5: failures
    cluster (a restriction the user did not write, a resource limit), so they inform. An
    objective that is not positive (a higher-is-better figure, negated) is modelled as it is,
    a failure then half the observed range above the worst."""
    v = np.array([np.nan if x is None else x for x in values], dtype=float)
    ok = np.isfinite(v)
    if not ok.any():
        return np.zeros(len(v))
    if (v[ok] > 0).all():
        y, step = np.log(np.where(ok, v, 1.0)), 0.5
    else:
        y, step = v, 0.5 * (float(np.ptp(v[ok])) or 1.0)
    return np.where(ok, y, np.max(y[ok]) + step)


def normal_scores(y: np.ndarray) -> np.ndarray:
    """The standard normal quantiles of the targets' ranks (ties share their mean rank): what
    the targets say of order alone, each as far from its neighbours in rank as a sample of a
    normal distribution would be, so that a few very slow or failed configurations do not
    squeeze every fast one into the bottom of the model's range."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    return ndtri((rankdata(y) - 0.5) / len(y))
