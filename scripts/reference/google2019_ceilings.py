#!/usr/bin/env python3
"""How much of the oracle's memory saving simple sizing rules can reach on
the Google 2019 per-task usage with zero OOM kills: a bound on what any
online forecaster can do there, next to `tailor frontier --workload
google2019:DIR` (docs/results.md, "Savings frontier (Google 2019)").

For every task CSV under DIR (the layout of
../shared/data/google-2019/instance_usage/<job>/<task>.csv), the series are
the 5-minute in-window memory peaks `max_memory_usage` and the request in
force (`memory_limit`, else `assigned_memory`), in time order. Peaks above
the request are cut to it, as in the simulator. Per sample, the saving of a
rule is `request - allocation`, and the oracle's is `request - peak`. A
"kill" is a sample whose peak is above the rule's allocation. The script
reports `sum(saving) / sum(oracle saving)`:

- hindsight per task: one allocation per task, its lifetime peak (knows
  the future; no kill);
- hindsight per day: each 288-sample day of a task at that day's peak
  (knows the future; no kill);
- online rules: for the first `--young` samples of a task the request
  (tailor's grace period and priors cover young tasks), then
  `min(request, max(last W peaks) * (1 + m) + k * sd)`, with sd the std of
  the last 48 first differences. The best rule with zero kills is
  reported, and so is the whole grid with `--all`;
- with `--seasonal`, online rules that also look back a day: the same
  rule raised to `max(peaks within +-H of the same time of day, on each
  of the last D days) * (1 + m)`, on the trace's clock (a daily pattern
  would foretell a jump that the last hours do not);
- with `--siblings`, online rules held at the request for H hours after
  any other task of the same job touched its request (a peak at 99% of
  it or more): a job whose tasks fill their limits together would warn
  the later ones.

Simplified against the simulator: no re-runs after a kill, no host
contention, no hysteresis. It is an analysis, not a fixture: nothing in
`cargo test` reads it.

    python3 scripts/reference/google2019_ceilings.py \
        [--dir ../shared/data/google-2019/instance_usage] [--young 6] [--all]
        [--seasonal] [--siblings]
"""

import argparse
import bisect
import csv
import glob
import itertools
import os


def load(directory):
    tasks = []
    for path in sorted(glob.glob(os.path.join(directory, "*", "*.csv"))):
        with open(path, newline="") as f:
            rows = sorted(csv.DictReader(f), key=lambda r: int(r["time"]))
        peaks, reqs, times = [], [], []
        for r in rows:
            times.append(int(r["time"]))
            req = float(r["memory_limit"] or 0) or float(r["assigned_memory"] or 0)
            peak = float(r["max_memory_usage"] or 0)
            reqs.append(req)
            peaks.append(min(peak, req))
        if peaks:
            tasks.append((os.path.relpath(path, directory), peaks, reqs, times))
    return tasks


def oracle_saving(tasks):
    return sum(r - p for _, ps, rs, _ in tasks for p, r in zip(ps, rs))


def hindsight_per_task(tasks):
    total = 0.0
    for _, ps, rs, _ in tasks:
        top = max(ps)
        total += sum(r - min(r, top) for r in rs)
    return total


def hindsight_per_day(tasks, day=288):
    total = 0.0
    for _, ps, rs, _ in tasks:
        for d0 in range(0, len(ps), day):
            top = max(ps[d0 : d0 + day])
            total += sum(r - min(r, top) for r in rs[d0 : d0 + day])
    return total


def scan(tasks, young, size):
    """Kills and saving of a rule: the request for a task's first `young`
    samples, then `min(request, size(peaks, times, t))`."""
    kills, total = 0, 0.0
    for _, ps, rs, ts in tasks:
        for t, (p, r) in enumerate(zip(ps, rs)):
            alloc = r if t < young else min(r, size(ps, ts, t))
            if p > alloc + 1e-12:
                kills += 1
            total += r - alloc
    return kills, total


def online_size(ps, t, window, margin, k):
    """`max(last window peaks) * (1 + margin) + k * sd` at sample `t`."""
    diffs = [b - a for a, b in zip(ps[max(0, t - 49) : t], ps[max(0, t - 48) : t])]
    sd = 0.0
    if len(diffs) >= 2:
        mean = sum(diffs) / len(diffs)
        sd = (sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)) ** 0.5
    return max(ps[max(0, t - window) : t]) * (1 + margin) + k * sd


def online(tasks, window, margin, k, young):
    return scan(tasks, young, lambda ps, _ts, t: online_size(ps, t, window, margin, k))


DAY_US = 86_400_000_000


def seasonal(tasks, window, margin, days, half_window_s, young):
    """`online` with no std term, raised to the peaks around the same time
    of day on each of the last `days` days."""

    def size(ps, ts, t):
        top = max(ps[max(0, t - window) : t])
        for d in range(1, days + 1):
            lo = bisect.bisect_left(ts, ts[t] - d * DAY_US - half_window_s * 1_000_000)
            hi = min(t, bisect.bisect_right(ts, ts[t] - d * DAY_US + half_window_s * 1_000_000))
            if hi > lo:
                top = max(top, max(ps[lo:hi]))
        return top * (1 + margin)

    return scan(tasks, young, size)


def sibling_touch_times(tasks, touch=0.99):
    """Per job folder, the sorted times of every sample at `touch` of the
    request or more, with the task that made each."""
    out = {}
    for name, ps, rs, ts in tasks:
        job = os.path.dirname(name)
        for p, r, t in zip(ps, rs, ts):
            if r > 0 and p / r >= touch:
                out.setdefault(job, []).append((t, name))
    for v in out.values():
        v.sort()
    return out


def with_siblings(tasks, window, margin, k, hold_h, young, touches):
    """`online`, held at the request for `hold_h` hours after another task
    of the same job touched its request."""
    kills, total = 0, 0.0
    for task in tasks:
        name = task[0]
        others = [t for t, n in touches.get(os.path.dirname(name), []) if n != name]

        def size(ps, ts, t, others=others):
            lo = bisect.bisect_left(others, ts[t] - hold_h * 3_600_000_000)
            if lo < len(others) and others[lo] < ts[t]:
                return float("inf")
            return online_size(ps, t, window, margin, k)

        n_kills, saving = scan([task], young, size)
        kills += n_kills
        total += saving
    return kills, total


def first_touches(tasks, day=288, touch=0.99):
    """The samples whose peak reaches `touch` of the request with no such
    sample in the day before (a one-day memory hold does not cover them),
    each with the largest peak / request of that day: how close to the
    request a rule must already sit not to kill there."""
    out = []
    for name, ps, rs, _ in tasks:
        ratio = [p / r if r > 0 else 0.0 for p, r in zip(ps, rs)]
        for t in range(1, len(ratio)):
            before = ratio[max(0, t - day) : t]
            if ratio[t] >= touch and max(before) < touch:
                out.append((name, t, max(before)))
    return out


def best_of_grid(label, grid, run, oracle, show_all, row, best_text):
    """Runs `run(params)` -> (kills, saving) over `grid` and prints the best
    share of the oracle's saving without a kill (every row with
    `show_all`)."""
    best = None
    for params in grid:
        kills, saving = run(params)
        share = saving / oracle
        if show_all:
            print(f"  {label}: {row(*params)}: {kills} kills, {share:.1%}")
        if kills == 0 and (best is None or share > best[0]):
            best = (share, params)
    if best is None:
        print(f"{label}: no rule of the grid without a kill")
    else:
        share, params = best
        print(
            f"{label}, best without a kill: {share:.1%} of the oracle's ({best_text(*params)})"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument(
        "--dir",
        default=os.path.join(here, "..", "..", "..", "shared", "data", "google-2019", "instance_usage"),
    )
    ap.add_argument("--young", type=int, default=6, help="samples at the request")
    ap.add_argument("--all", action="store_true", help="print every rule of the grid")
    ap.add_argument("--seasonal", action="store_true", help="also the rules that look back a day")
    ap.add_argument(
        "--siblings", action="store_true", help="also the rules held after a sibling's touch"
    )
    a = ap.parse_args()
    tasks = load(a.dir)
    if not tasks:
        raise SystemExit(f"{a.dir}: no task CSV under <job>/")
    oracle = oracle_saving(tasks)
    n = sum(len(ps) for _, ps, _, _ in tasks)
    print(f"{len(tasks)} tasks, {n} samples; oracle saving {oracle:.3f} (request units x samples)")
    print(f"hindsight per task: {hindsight_per_task(tasks) / oracle:.1%} of the oracle's")
    print(f"hindsight per day:  {hindsight_per_day(tasks) / oracle:.1%} of the oracle's")
    touches = first_touches(tasks)
    if touches:
        before = sorted(b for _, _, b in touches)
        print(
            f"first touches of the request (>= 99%, none in the day before): {len(touches)} "
            f"in {len({n for n, _, _ in touches})} tasks; the day before peaked at "
            f"{before[0]:.3f}-{before[-1]:.3f} of the request (median {before[len(before) // 2]:.3f})"
        )
    best = None
    for window in (1, 2, 3, 6, 12, 288):
        for margin in (0.0, 0.01, 0.02, 0.03, 0.05, 0.1):
            for k in (0.0, 0.5, 1.0, 2.0):
                kills, saving = online(tasks, window, margin, k, a.young)
                share = saving / oracle
                if a.all:
                    print(f"  window {window:>3} margin {margin:.2f} k {k:.1f}: {kills} kills, {share:.1%}")
                if kills == 0 and (best is None or share > best[0]):
                    best = (share, window, margin, k)
    if best is None:
        print("online: no rule of the grid without a kill")
    else:
        share, window, margin, k = best
        print(
            f"online, best without a kill: {share:.1%} of the oracle's "
            f"(window {window} samples, margin {margin}, k {k})"
        )

    if a.seasonal:
        best_of_grid(
            "seasonal",
            itertools.product((6, 12, 36), (0.02, 0.05, 0.1), (1, 3, 7), (3600, 3 * 3600)),
            lambda p: seasonal(tasks, *p, a.young),
            oracle,
            a.all,
            lambda w, m, d, h: f"window {w:>2} margin {m:.2f} days {d} +-{h // 3600} h",
            lambda w, m, d, h: f"window {w} samples, margin {m}, {d} days back, +-{h // 3600} h",
        )

    if a.siblings:
        touches = sibling_touch_times(tasks)
        best_of_grid(
            "siblings",
            itertools.product((3, 6, 12), (0.05, 0.08, 0.1), (0.0, 1.0), (1, 2, 6, 24)),
            lambda p: with_siblings(tasks, *p, a.young, touches),
            oracle,
            a.all,
            lambda w, m, k, h: f"window {w:>2} margin {m:.2f} k {k:.1f} hold {h} h",
            lambda w, m, k, h: (
                f"window {w} samples, margin {m}, k {k}, held {h} h after a sibling's touch"
            ),
        )

if __name__ == "__main__":
    main()
