#!/usr/bin/env python3
"""How far simple memory-sizing rules get on the Bitbrains VMs without an
OOM kill: a bound on what any online forecaster can do there, next to
`tailor frontier --workload bitbrains:DIR` (docs/results.md, "Bitbrains VMs").

For every VM file in DIR (the layout of
../shared/data/bitbrains-rnd/2013-7/<vm>.csv: header, `;` + TAB
separators), the series are the on rows (CPU cores and provisioned memory
> 0) in time order, without repeated timestamps: `Memory usage [KB]` /
`Memory capacity provisioned [KB]`, cut to 1 as in the simulator, and the
provisioned GiB. Per sample, the saving of a rule is `1 - allocation`
(relative to the provisioned memory), weighted by the provisioned GiB; the
oracle's is `1 - usage`. A VM is "killed" when a sample's usage is above
the rule's allocation. The rules:

- for the first `wait` days of a VM, its provisioned memory (a grace
  period long enough to see a weekly peak);
- then `min(1, max(usage over the last `hold` days, or over its whole
  history) + k1)`.

The script prints, per rule, the VMs killed and the share of the oracle's
saving. Simplified against the simulator: no re-runs after a kill (the
first kill counts), no hosts, runs not split at the collection gaps. It is
an analysis, not a fixture: nothing in `cargo test` reads it.

    python3 scripts/reference/bitbrains_ceilings.py \
        [--dir ../shared/data/bitbrains-rnd/2013-7]
"""

import argparse
import glob
import os
from collections import deque

SAMPLES_PER_DAY = 288


def load(dir_):
    vms = []
    for path in sorted(glob.glob(os.path.join(dir_, "*.csv"))):
        by_time = {}
        with open(path) as f:
            next(f)
            for line in f:
                c = line.rstrip("\n").split(";\t")
                t, cores, cap, used = int(c[0]), float(c[1]), float(c[5]), float(c[6])
                if cores > 0 and cap > 0 and t not in by_time:
                    by_time[t] = (min(used / cap, 1.0), cap / 2**20)
        if len(by_time) >= 2:
            rows = [by_time[t] for t in sorted(by_time)]
            vms.append((os.path.basename(path), rows))
    return vms


def window_max(values, w):
    """max(values[i - w : i]) for each i (0 before the first value)."""
    out, q = [], deque()
    for i, v in enumerate(values):
        while q and q[0] < i - w:
            q.popleft()
        out.append(values[q[0]] if q else 0.0)
        while q and values[q[-1]] <= v:
            q.pop()
        q.append(i)
    return out


def evaluate(vms, wait_days, hold_days, k1):
    killed, save, oracle = 0, 0.0, 0.0
    for _, rows in vms:
        u = [r[0] for r in rows]
        w = len(u) if hold_days is None else hold_days * SAMPLES_PER_DAY
        held = window_max(u, w)
        hit = False
        for i, (x, gib) in enumerate(rows):
            a = 1.0 if i <= wait_days * SAMPLES_PER_DAY else min(1.0, held[i] + k1)
            hit |= x > a + 1e-12
            save += (1.0 - a) * gib
            oracle += (1.0 - x) * gib
        killed += hit
    return killed, save / oracle if oracle > 0 else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="../shared/data/bitbrains-rnd/2013-7")
    a = ap.parse_args()
    vms = load(a.dir)
    print(f"{len(vms)} VMs with on rows in {a.dir}")
    print("| wait (days) | hold | k1 | VMs killed | oracle's saving |")
    print("|---|---|---|---|---|")
    for wait in (0, 1, 3, 7):
        for hold in (1, 7, None):
            for k1 in (0.05, 0.2, 0.4):
                n, share = evaluate(vms, wait, hold, k1)
                h = "all history" if hold is None else f"{hold} d"
                print(f"| {wait} | {h} | {k1} | {n} of {len(vms)} | {100 * share:.1f}% |")


if __name__ == "__main__":
    main()
