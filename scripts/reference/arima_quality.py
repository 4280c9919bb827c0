#!/usr/bin/env python3
"""One-step-ahead quality of statsforecast's AutoARIMA on tailor's quality
series with the issue's reference protocol, scored like
`forecaster::eval::replay`, next to tailor's online auto-ARIMA on the same
series (`cargo run --release -p forecaster --example quality -- arima`).

Protocol: before each sample i (i >= 1) of the first 300 of a series, fit
statsforecast's AutoARIMA (season_length = 1, defaults: stepwise, AICc,
KPSS d, CSS-ML) from scratch on the last 60 values seen and forecast y_i
(mean, std from the 68.3% interval). With fewer than 10 values seen (tailor's
`min_samples`), or when the fit fails, the forecast is the last value.
MASE = MAE / last-value MAE over the same points, median over series.

    pip install statsforecast
    nice -n 10 python3 scripts/reference/arima_quality.py [--set main|holdout]
        [--stride K] [--max-points N]

Each fit costs ~0.1-0.2 s, so the full main set (52 series x 300 points) is
~40 CPU minutes: --stride K keeps every K-th series. The series come from
`QUALITY_DUMP=FILE cargo run --release -p forecaster --example quality`,
tailor's per-series MASE from `QUALITY_VERBOSE=1` of the same example (set
CARGO_TARGET_DIR as usual; both are run by this script).
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from statsforecast.arima import auto_arima_f, forecast_arima  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WINDOW = 60
MIN_SAMPLES = 10
Z1 = 1.0  # 68.27% two-sided interval half-width in sigmas


def cargo_quality(env_extra, args):
    env = dict(os.environ, **env_extra)
    cmd = ["cargo", "run", "--quiet", "--release", "-p", "forecaster", "--example", "quality"]
    return subprocess.run(cmd + args, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


def load(which):
    with tempfile.NamedTemporaryFile("r", suffix=".tsv", delete=False) as f:
        path = f.name
    extra = {"QUALITY_DUMP": path}
    if which == "holdout":
        extra["QUALITY_SET"] = "holdout"
    cargo_quality(extra, [])
    out = []
    with open(path) as f:
        for line in f:
            name, vals = line.rstrip("\n").split("\t")
            out.append((name, [float(v) for v in vals.split(",") if v]))
    os.unlink(path)
    return out


def tailor_mases(which):
    """Per-series MASE of tailor's `arima` (default config) by name."""
    extra = {"QUALITY_VERBOSE": "1"}
    if which == "holdout":
        extra["QUALITY_SET"] = "holdout"
    out = {}
    for line in cargo_quality(extra, ["arima"]).splitlines():
        m = re.match(r"^\s{4}(.*\S)\s+mase (\S+) ", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def forecast_one(seen):
    y = np.asarray(seen[-WINDOW:], dtype=np.float64)
    if len(y) < MIN_SAMPLES:
        return seen[-1], float("nan")
    try:
        model = auto_arima_f(y.copy(), period=1)
        fc = forecast_arima(model, h=1, level=(68.27,))
        mu = float(fc["mean"][0])
        sd = (float(fc["upper"]["68.27%"][0]) - mu) / Z1
        if math.isfinite(mu):
            return mu, sd
    except Exception:  # noqa: BLE001 - any statsforecast failure -> fallback
        pass
    return seen[-1], float("nan")


def replay(values, max_points):
    values = [v for v in values if math.isfinite(v)][:max_points]
    err = naive = 0.0
    pts = 0
    for i in range(1, len(values)):
        mu, _ = forecast_one(values[:i])
        a = values[i]
        pts += 1
        err += abs(a - mu)
        naive += abs(a - values[i - 1])
    return pts, err, naive


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="main", choices=["main", "holdout"])
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--max-points", type=int, default=300)
    args = ap.parse_args()
    series = load(args.set)[:: args.stride]
    ours = tailor_mases(args.set) if args.max_points == 300 else {}
    ref, tl = [], []
    tot_err = tot_naive = 0.0
    t0 = time.process_time()
    fits = 0
    for name, v in series:
        pts, err, naive = replay(v, args.max_points)
        fits += pts
        tot_err += err
        tot_naive += naive
        mase = err / naive if naive > 0 else float("nan")
        ref.append(mase)
        o = ours.get(name, float("nan"))
        tl.append(o)
        print(f"    {name:<70} statsforecast mase {mase:.3f}   tailor {o:.3f}", flush=True)

    def med(xs):
        fin = [x for x in xs if math.isfinite(x)]
        return float(np.median(fin)) if fin else float("nan")

    cpu = time.process_time() - t0
    print(
        f"set={args.set} stride={args.stride} series {len(series)} points {fits}: "
        f"statsforecast median MASE {med(ref):.3f} pooled {tot_err / max(tot_naive, 1e-300):.3f} "
        f"({1e3 * cpu / max(fits, 1):.0f} ms CPU per step); tailor arima median MASE on the same "
        f"series {med(tl):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
