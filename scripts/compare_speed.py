#!/usr/bin/env python3
"""Times statsforecast's AutoARIMA and scikit-learn's history-kernel GP
against tailor's forecaster on the same real series, in the same run, on
one thread, and prints the speed-up ratios.

    pip install statsforecast scikit-learn
    python3 scripts/compare_speed.py            # builds the timing binary in release

Series (first 300 samples): Bitbrains 2013-7 VMs 1-3 CPU and memory,
GCD_VMs members 0 and 400 CPU and memory (../shared/data).
* ARIMA: cold auto-ARIMA on 60-point windows at steps 0, 60, 120, ...
  (statsforecast `AutoARIMA(season_length=1)`, its numba JIT warmed up
  first) vs `forecaster::arima::auto_arima`; plus our online update.
* GP (N = h = 20): scikit-learn `GaussianProcessRegressor(ConstantKernel *
  Matern(nu=0.5) + WhiteKernel, normalize_y=True)` fitted on the 20 latest
  patterns and queried, at every 5th step after step 40 (what one online
  step costs it: scikit-learn has no warm start), vs our online update
  (warm refit + forecast, periodic cold refits included) and our cold fit
  (3 starts) on 40-point windows (every 3rd step, fastest of 5).
Ours are measured by `forecaster/examples/speed.rs` (medians).
"""
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DATA = os.path.join(ROOT, "..", "shared", "data")
STEPS = 300
H = 20


def bitbrains(vm, col):
    with open(os.path.join(DATA, "bitbrains-rnd", "2013-7", f"{vm}.csv")) as f:
        header = [h.strip() for h in f.readline().split(";\t")]
        i = header.index(col)
        return [float(line.split(";\t")[i]) for line in f if line.strip()]


def gcd(idx, col):
    with tarfile.open(os.path.join(DATA, "google-2011", "derived", "GCD_VMs.tar.gz")) as t:
        m = [m for m in t.getmembers() if m.isfile()][idx]
        text = t.extractfile(m).read().decode()
    return [float(line.split()[col]) for line in text.splitlines() if line.strip()]


def load():
    out = []
    for vm in (1, 2, 3):
        out.append(bitbrains(vm, "CPU usage [MHZ]")[:STEPS])
        out.append(bitbrains(vm, "Memory usage [KB]")[:STEPS])
    for idx in (0, 400):
        out.append(gcd(idx, 0)[:STEPS])
        out.append(gcd(idx, 1)[:STEPS])
    return out


def time_statsforecast(series):
    from statsforecast.models import AutoARIMA

    AutoARIMA(season_length=1).fit(np.asarray(series[0][:60], dtype=np.float64))  # JIT warm-up
    times = []
    for s in series:
        for start in range(0, len(s) - 59, 60):
            y = np.asarray(s[start : start + 60], dtype=np.float64)
            t0 = time.perf_counter()
            AutoARIMA(season_length=1).fit(y).predict(h=1, level=[95])
            times.append(time.perf_counter() - t0)
    return float(np.median(times)), len(times)


def patterns(w):
    w = np.asarray(w, dtype=np.float64)
    ln = len(w)
    m, s = float(np.mean(w[H:])), float(np.std(w[H:])) or 1.0
    x = [[(j - ln) / 20.0] + list((w[j - H : j] - m) / s) for j in range(H, ln)]
    xt = [[0.0] + list((w[ln - H :] - m) / s)]
    return np.array(x), w[H:], np.array(xt)


def time_sklearn(series):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    times = []
    for s in series:
        for i in range(40, len(s), 5):
            x, y, xt = patterns(s[i - 40 : i])
            t0 = time.perf_counter()
            k = ConstantKernel(1.0, (1e-3, 1e2)) * Matern(1.0, (1e-2, 1e3), nu=0.5) + WhiteKernel(0.1, (1e-6, 1e1))
            gpr = GaussianProcessRegressor(kernel=k, normalize_y=True).fit(x, y)
            gpr.predict(xt, return_std=True)
            times.append(time.perf_counter() - t0)
    return float(np.median(times)), len(times)


def time_ours(series):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        for s in series:
            f.write(",".join(repr(v) for v in s) + "\n")
        path = f.name
    cmd = ["cargo", "run", "--quiet", "--release", "-p", "forecaster", "--example", "speed", "--", path]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    os.unlink(path)
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(s):
    return f"{s * 1e3:9.3f} ms" if s >= 1e-3 else f"{s * 1e6:9.1f} us"


def main():
    if not os.path.isdir(DATA):
        print("skipped: ../shared/data not found")
        return 0
    series = load()
    ours = time_ours(series)
    sf, n_sf = time_statsforecast(series)
    sk, n_sk = time_sklearn(series)
    print(f"series: {len(series)} x {STEPS} samples (Bitbrains 1-3 cpu/mem, GCD_VMs 0/400 cpu/mem), single thread\n")
    print(f"{'':44} {'median':>12}  {'speed-up':>9}")
    print(f"{'statsforecast AutoARIMA, 60-pt window':44} {fmt(sf):>12}  ({n_sf} fits)")
    print(f"{'tailor auto_arima, 60-pt window (cold)':44} {fmt(ours['arima_cold_s']):>12}  {sf / ours['arima_cold_s']:8.1f}x")
    print(f"{'tailor AutoArima online update':44} {fmt(ours['arima_update_s']):>12}  {sf / ours['arima_update_s']:8.1f}x")
    print(f"{'scikit-learn GP fit+predict, N=h=20':44} {fmt(sk):>12}  ({n_sk} fits)")
    print(f"{'tailor GP cold fit (3 starts), N=h=20':44} {fmt(ours['gp_cold_fit_s']):>12}  {sk / ours['gp_cold_fit_s']:8.1f}x")
    print(f"{'  (p90 / max of the cold fits)':44} {fmt(ours['gp_cold_fit_p90_s']):>12}  {fmt(ours['gp_cold_fit_max_s'])}")
    print(f"{'tailor GP online update, N=h=20':44} {fmt(ours['gp_update_s']):>12}  {sk / ours['gp_update_s']:8.1f}x")
    print(f"{'  (p90)':44} {fmt(ours['gp_update_p90_s']):>12}")
    print(f"{'  (mean incl. periodic cold refits)':44} {fmt(ours['gp_update_mean_s']):>12}  {sk / ours['gp_update_mean_s']:8.1f}x")
    print("\nthread CPU time (not inflated by other processes on the machine):")
    print(f"{'tailor GP online update, N=h=20, mean':44} {fmt(ours['gp_update_cpu_mean_s']):>12}")
    print(f"{'tailor GP cold fit, N=h=20, mean':44} {fmt(ours['gp_cold_fit_cpu_mean_s']):>12}")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
