#!/usr/bin/env python3
"""Reference fixtures for tailor's history-kernel GP (forecaster/src/gp).

Takes 40-point windows (N = h = 20: 20 patterns of 20 lags) of real series
from ../shared/data (relative to the workspace root), builds the
history-kernel patterns exactly as `forecaster::gp::build_patterns` does
(prior mean `window`, time_scale_steps = 20):

    targets  y_j = w[j], j = h..len-1, standardised by their mean and
             population std (scikit-learn's normalize_y)
    inputs   [(j - len) / 20, (w[j-h..j] - m) / s]   (m, s: mean/std of w[h:])
    test     [0, (w[len-h..] - m) / s]

fits scikit-learn's GaussianProcessRegressor with
ConstantKernel * Matern(nu=0.5) + WhiteKernel (isotropic lengthscale, the
bounds tailor uses, alpha = 1e-10, 5 seeded optimiser restarts) and writes
forecaster/fixtures/gp/sklearn_gp.json with, per window: the values, X, y,
sklearn's optimum (length_scale, signal variance, noise variance), its log
marginal likelihood, the LML at two fixed hyperparameter points, and the
predictive mean and std (noise included) at the test pattern.

Run: `pip install scikit-learn && python3 scripts/reference/gp_fixtures.py`.
Never run by `cargo test`: the fixtures are committed.
"""
import csv
import json
import math
import os
import tarfile
import warnings

import numpy as np

warnings.filterwarnings("ignore")

import sklearn  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "..", "shared", "data")
OUT = os.path.join(ROOT, "forecaster", "fixtures", "gp", "sklearn_gp.json")
H = 20
N = 20
TIME_SCALE = 20.0
LS_BOUNDS = (1e-2, 1e3)
SF_BOUNDS = (1e-3, 1e2)
SN_BOUNDS = (1e-6, 1e1)
FIXED = [(1.0, 1.0, 0.1), (3.0, 0.5, 0.01)]  # (length_scale, signal_var, noise_var)


def mean_scale(v):
    m = float(np.mean(v))
    s = float(np.std(v))
    if not (s >= 10 * np.finfo(float).eps and s > 1e-12 * abs(m)):
        s = 1.0
    return m, s


def patterns(w):
    w = np.asarray(w, dtype=np.float64)
    ln = len(w)
    m, s = mean_scale(w[H:])
    ym, ys = mean_scale(w[H:])
    x = []
    for j in range(H, ln):
        x.append([(j - ln) / TIME_SCALE] + list((w[j - H : j] - m) / s))
    y = (w[H:] - ym) / ys
    xt = [0.0] + list((w[ln - H :] - m) / s)
    return np.array(x), y, np.array([xt]), ym, ys


def bitbrains(vm, col):
    path = os.path.join(DATA, "bitbrains-rnd", "2013-7", f"{vm}.csv")
    with open(path) as f:
        header = [h.strip() for h in f.readline().split(";\t")]
        i = header.index(col)
        return [float(line.split(";\t")[i]) for line in f if line.strip()]


def google2019(fname, col):
    path = os.path.join(DATA, "google-2019", "instance_usage_job113", fname)
    out = {}
    order = []
    with open(path) as f:
        for row in csv.DictReader(f):
            uid = row["unique_id"] if "unique_id" in row else "all"
            if uid not in out:
                out[uid] = []
                order.append(uid)
            out[uid].append(float(row[col]))
    return out[order[0]]


def gcd(member_index, col):
    path = os.path.join(DATA, "google-2011", "derived", "GCD_VMs.tar.gz")
    with tarfile.open(path) as t:
        members = [m for m in t.getmembers() if m.isfile()]
        m = members[member_index]
        text = t.extractfile(m).read().decode()
    vals = [line.split() for line in text.splitlines() if line.strip()]
    return m.name, [float(v[col]) for v in vals]


def derived(col_index):
    path = os.path.join(DATA, "google-2011", "derived", "data_resource_usage_5Minutes_6176858948.csv")
    with open(path) as f:
        return [float(line.split(",")[col_index]) for line in f if line.strip()]


def main():
    series = []
    for vm in (1, 3, 5, 7):
        series.append((f"bitbrains/{vm}:cpu", bitbrains(vm, "CPU usage [MHZ]")))
        series.append((f"bitbrains/{vm}:mem", bitbrains(vm, "Memory usage [KB]")))
    for fname in sorted(os.listdir(os.path.join(DATA, "google-2019", "instance_usage_job113")))[:2]:
        series.append((f"google2019/{fname}:cpu", google2019(fname, "avg_cpu_usage")))
        series.append((f"google2019/{fname}:mem", google2019(fname, "avg_memory_usage")))
    for idx in (0, 400, 800, 1200):
        name, v = gcd(idx, 0)
        series.append((f"gcd/{name}:cpu", v))
        name, v = gcd(idx, 1)
        series.append((f"gcd/{name}:mem", v))
    series.append(("google2011-derived:meanCPUUsage", derived(3)))

    windows = []
    for name, vals in series:
        for start in (50, 150, 240):
            w = vals[start : start + N + H]
            if len(w) < N + H:
                continue
            x, y, xt, ym, ys = patterns(w)
            kernel = ConstantKernel(1.0, SF_BOUNDS) * Matern(1.0, LS_BOUNDS, nu=0.5) + WhiteKernel(0.1, SN_BOUNDS)
            gpr = GaussianProcessRegressor(kernel=kernel, normalize_y=True, n_restarts_optimizer=5, random_state=0)
            gpr.fit(x, np.asarray(w[H:], dtype=np.float64))
            k = gpr.kernel_
            sf2 = float(k.k1.k1.constant_value)
            ls = float(k.k1.k2.length_scale)
            sn2 = float(k.k2.noise_level)
            mean, std = gpr.predict(xt, return_std=True)
            fixed = []
            for fl, fs, fn in FIXED:
                # sklearn's theta order: log constant, log length_scale, log noise
                th = np.log([fs, fl, fn])
                fixed.append({"length_scale": fl, "signal_var": fs, "noise_var": fn,
                              "lml": float(gpr.log_marginal_likelihood(th))})
            windows.append({
                "series": name,
                "start": start,
                "values": [float(v) for v in w],
                "x": x.tolist(),
                "y": [float(v) for v in y],
                "x_test": xt[0].tolist(),
                "length_scale": ls,
                "signal_var": sf2,
                "noise_var": sn2,
                "lml": float(gpr.log_marginal_likelihood_value_),
                "fixed": fixed,
                "mean": float(mean[0]),
                "std": float(std[0]),
            })
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({
            "generator": "scripts/reference/gp_fixtures.py",
            "sklearn": sklearn.__version__,
            "history": H,
            "train_size": N,
            "time_scale_steps": TIME_SCALE,
            "bounds": {"length_scale": LS_BOUNDS, "signal_var": SF_BOUNDS, "noise_var": SN_BOUNDS},
            "windows": windows,
        }, f, indent=1)
    print(f"wrote {len(windows)} windows to {OUT}")


if __name__ == "__main__":
    main()
