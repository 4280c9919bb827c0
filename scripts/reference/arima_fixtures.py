#!/usr/bin/env python3
"""Reference fixtures for tailor's auto-ARIMA (forecaster/src/arima).

Takes 60-point windows of real series from ../shared/data (relative to the
workspace root), fits statsforecast's AutoARIMA (season_length=1, default
settings: stepwise, AICc, KPSS for d, CSS-ML) and writes
forecaster/fixtures/arima/statsforecast_autoarima.json with, per series: the
values, the chosen order, the constant flag (mean or drift), coefficients,
sigma2, loglik, aicc and the 1..5-step forecast means and standard errors.

Run from anywhere: `pip install statsforecast && python3 scripts/reference/arima_fixtures.py`.
Never run by `cargo test`: the fixtures are committed.
"""
import csv
import io
import json
import math
import os
import sys
import tarfile
import warnings

import numpy as np

warnings.filterwarnings("ignore")

import statsforecast  # noqa: E402
from statsforecast.arima import auto_arima_f, forecast_arima  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "..", "shared", "data")
OUT = os.path.join(ROOT, "forecaster", "fixtures", "arima", "statsforecast_autoarima.json")
WINDOW = 60
H = 5


def windows(name, series, starts):
    out = []
    for s in starts:
        w = np.asarray(series[s : s + WINDOW], dtype=np.float64)
        if len(w) == WINDOW and np.all(np.isfinite(w)):
            out.append((f"{name}@{s}", w))
    return out


def gcd_vms():
    path = os.path.join(DATA, "google-2011", "derived", "GCD_VMs.tar.gz")
    res = []
    with tarfile.open(path, "r:gz") as tar:
        members = sorted([m for m in tar.getmembers() if m.isfile()], key=lambda m: m.name)
        for m in members[::160][:6]:
            rows = tar.extractfile(m).read().decode().split("\n")
            vals = [list(map(float, r.split())) for r in rows if r.strip()]
            cpu = [v[0] for v in vals]
            mem = [v[1] for v in vals]
            base = os.path.basename(m.name)
            res += windows(f"gcd/{base}/cpu", cpu, [40])
            res += windows(f"gcd/{base}/mem", mem, [150])
    return res


def bitbrains():
    res = []
    for i in [1, 2, 3, 4, 5, 6]:
        path = os.path.join(DATA, "bitbrains-rnd", "2013-7", f"{i}.csv")
        cpu, mem = [], []
        with open(path) as f:
            next(f)
            for line in f:
                parts = [p.strip() for p in line.split(";")]
                if len(parts) < 11:
                    continue
                cpu.append(float(parts[3]))
                mem.append(float(parts[6]))
        res += windows(f"bitbrains/{i}/cpu", cpu, [1000])
        res += windows(f"bitbrains/{i}/mem", mem, [3000])
    return res


def google2019():
    res = []
    d = os.path.join(DATA, "google-2019", "instance_usage_job113")
    for fn in sorted(os.listdir(d)):
        with open(os.path.join(d, fn)) as f:
            rows = list(csv.DictReader(f))
        rows.sort(key=lambda r: int(r["time"]))
        cpu = [float(r["avg_cpu_usage"]) for r in rows]
        mem = [float(r["avg_memory_usage"]) for r in rows]
        tag = fn.split("-")[0]
        res += windows(f"google2019/{tag}/cpu", cpu, [500])
        res += windows(f"google2019/{tag}/mem", mem, [2000])
    return res


def google2011_derived():
    path = os.path.join(DATA, "google-2011", "derived", "data_resource_usage_5Minutes_6176858948.csv")
    cpu, mem = [], []
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) < 5:
                continue
            cpu.append(float(parts[3]))
            mem.append(float(parts[4]))
    res = windows("google2011/6176858948/cpu", cpu, [100, 2100, 4100, 6100])
    res += windows("google2011/6176858948/mem", mem, [1100, 3100, 5100, 7100])
    return res


def num(v):
    """JSON number, or null for NaN/inf (JSON has no NaN)."""
    v = float(v)
    return v if math.isfinite(v) else None


def fit_one(name, y):
    model = auto_arima_f(y.copy(), period=1)
    arma = model["arma"]
    order = [int(arma[0]), int(arma[5]), int(arma[1])]
    coef = {k: num(v) for k, v in model["coef"].items()}
    constant = ("intercept" in coef) or ("drift" in coef)
    fc = forecast_arima(model, h=H, level=(95,))
    mean = np.asarray(fc["mean"], dtype=np.float64)
    upper = np.asarray(fc["upper"]["95%"], dtype=np.float64)
    z = 1.959963984540054
    std = (upper - mean) / z
    return {
        "id": name,
        "values": [float(v) for v in y],
        "order": order,
        "constant": bool(constant),
        "coef": coef,
        "sigma2": num(model["sigma2"]),
        "loglik": num(model.get("loglik", float("nan"))),
        "aicc": num(model.get("aicc", float("nan"))),
        "mean": [float(v) for v in mean],
        "std": [float(v) for v in std],
    }


def main():
    series = gcd_vms() + bitbrains() + google2019() + google2011_derived()
    out = []
    for name, y in series:
        try:
            rec = fit_one(name, y)
        except Exception as e:  # statsforecast can refuse a series; skip it
            print(f"skip {name}: {e}", file=sys.stderr)
            continue
        if not all(math.isfinite(v) for v in rec["mean"] + rec["std"]):
            print(f"skip {name}: non-finite forecast", file=sys.stderr)
            continue
        out.append(rec)
        print(f"{name}: order={rec['order']} constant={rec['constant']} mean1={rec['mean'][0]:.6g}")
    doc = {
        "generator": "scripts/reference/arima_fixtures.py",
        "statsforecast_version": statsforecast.__version__,
        "settings": "auto_arima_f(y, period=1) defaults: stepwise, ic=aicc, test=kpss, CSS-ML",
        "window": WINDOW,
        "horizon": H,
        "series": out,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
    print(f"wrote {len(out)} series to {OUT}")


if __name__ == "__main__":
    main()
