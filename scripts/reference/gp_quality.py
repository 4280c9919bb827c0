#!/usr/bin/env python3
"""One-step-ahead quality of scikit-learn's history-kernel GP on tailor's
quality series, scored exactly like `forecaster::eval::replay`, so its
median MASE can be set next to `cargo run --release -p forecaster --example
quality -- gp`.

Protocol (the issue's reference): before each sample i (i >= 1) of the first
300 of a series, with the values seen so far, fit scikit-learn's
GaussianProcessRegressor(ConstantKernel(1) * Matern(1, nu=0.5) +
WhiteKernel(0.1), normalize_y=True) from that initial kernel (no warm start)
on the N latest history-kernel patterns [t, y_{j-h}..y_{j-1}] -> y_j and
predict y_i (mean, std with noise). Patterns are built as
`forecaster::gp::build_patterns` does (time coordinate (j - len) / 20,
history standardised by the mean/std of the targets). With fewer than
h + 5 values seen the forecast is the last value (as tailor's GP falls back).
MASE = MAE / last-value MAE over the same points, median over series.

    pip install scikit-learn
    nice -n 10 python3 scripts/reference/gp_quality.py [--set main|holdout]
        [--stride K] [--train N] [--history H] [--time-scale S] [--restarts R]
        [--aniso]

--stride K keeps every K-th series (a subset: the full main set is ~14k
fits, a few minutes). --time-scale 0 drops the time coordinate. --aniso
gives the time and the history values separate lengthscales. The series
come from `QUALITY_DUMP=FILE cargo run --release -p forecaster --example
quality` (run by this script).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

warnings.filterwarnings("ignore")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAX_POINTS = 300
MIN_TRAIN = 5


def load(which):
    with tempfile.NamedTemporaryFile("r", suffix=".tsv", delete=False) as f:
        path = f.name
    env = dict(os.environ, QUALITY_DUMP=path)
    if which == "holdout":
        env["QUALITY_SET"] = "holdout"
    cmd = ["cargo", "run", "--quiet", "--release", "-p", "forecaster", "--example", "quality"]
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)
    out = []
    with open(path) as f:
        for line in f:
            name, vals = line.rstrip("\n").split("\t")
            out.append((name, [float(v) for v in vals.split(",") if v]))
    os.unlink(path)
    return out


def mean_scale(v):
    m = float(np.mean(v))
    s = float(np.std(v))
    if not (s >= 10 * np.finfo(float).eps and s > 1e-12 * abs(m)):
        s = 1.0
    return m, s


def patterns(w, h, ts):
    w = np.asarray(w, dtype=np.float64)
    ln = len(w)
    m, s = mean_scale(w[h:])
    x, xt = [], []
    for j in range(h, ln):
        row = list((w[j - h : j] - m) / s)
        x.append(([(j - ln) / ts] if ts > 0 else []) + row)
    row = list((w[ln - h :] - m) / s)
    xt = ([0.0] if ts > 0 else []) + row
    return np.array(x), w[h:], np.array([xt])


def kernel(dim, aniso):
    ls = np.ones(dim) if aniso else 1.0
    return ConstantKernel(1.0, (1e-3, 1e2)) * Matern(ls, (1e-2, 1e3), nu=0.5) + WhiteKernel(
        0.1, (1e-6, 1e1)
    )


def replay(values, args):
    h, n = args.history, args.train
    values = [v for v in values if math.isfinite(v)][:MAX_POINTS]
    err = naive = 0.0
    pts = 0
    inside = [0, 0, 0, 0]  # last slot: GP points
    above = [0, 0, 0]
    for i in range(1, len(values)):
        seen = values[:i]
        if len(seen) >= h + MIN_TRAIN:
            w = seen[-(h + n) :]
            x, y, xt = patterns(w, h, args.time_scale)
            aniso = args.aniso and args.time_scale > 0
            gpr = GaussianProcessRegressor(
                kernel=kernel(x.shape[1], aniso),
                normalize_y=True,
                n_restarts_optimizer=args.restarts,
                random_state=0,
            ).fit(x, y)
            mu, sd = gpr.predict(xt, return_std=True)
            mu, sd = float(mu[0]), float(sd[0])
        else:
            mu, sd = seen[-1], float("nan")
        a = values[i]
        pts += 1
        err += abs(a - mu)
        naive += abs(a - values[i - 1])
        if math.isfinite(sd):
            inside[3] += 1
            for k in range(3):
                inside[k] += abs(a - mu) <= (k + 1) * sd
                above[k] += a > mu + (k + 1) * sd
    return pts, err, naive, inside, above


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="main", choices=["main", "holdout"])
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--train", type=int, default=20)
    ap.add_argument("--history", type=int, default=20)
    ap.add_argument("--time-scale", type=float, default=20.0)
    ap.add_argument("--restarts", type=int, default=0)
    ap.add_argument("--aniso", action="store_true")
    args = ap.parse_args()
    series = load(args.set)[:: args.stride]
    mases = []
    tot = [0, 0.0, 0.0, [0, 0, 0, 0], [0, 0, 0]]
    for name, v in series:
        pts, err, naive, inside, above = replay(v, args)
        mase = err / naive if naive > 0 else float("nan")
        mases.append(mase)
        tot[0] += pts
        tot[1] += err
        tot[2] += naive
        for k in range(3):
            tot[3][k] += inside[k]
            tot[4][k] += above[k]
        tot[3][3] += inside[3]
        print(f"    {name:<70} mase {mase:.3f}", flush=True)
    fin = sorted(m for m in mases if math.isfinite(m))
    med = float(np.median(fin)) if fin else float("nan")
    p = max(tot[3][3], 1)
    print(
        f"sklearn set={args.set} stride={args.stride} N={args.train} h={args.history} "
        f"time_scale={args.time_scale} restarts={args.restarts} aniso={args.aniso}: "
        f"series {len(series)} points {tot[0]} median MASE {med:.3f} pooled MASE {tot[1] / tot[2]:.3f} "
        f"cov1/2/3 {100 * tot[3][0] / p:.2f}/{100 * tot[3][1] / p:.2f}/{100 * tot[3][2] / p:.2f}% "
        f"above3 {100 * tot[4][2] / p:.3f}% (coverage over the GP's points)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
