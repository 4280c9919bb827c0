#!/usr/bin/env python3
"""Do siblings jump together? How many of a job's running tasks take part
in each of its memory jumps, on the Google 2019 per-task usage: a check of
the usage pool's rule that every task of a job replays the same shape at
the same phase (`datasets/src/pool.rs`), so that a jump in it is a jump of
every sibling at the same age.

For every task CSV under DIR (the layout of
../shared/data/google-2019/instance_usage/<job>/<task>.csv), the series is
the 5-minute in-window memory peak `max_memory_usage` relative to the
request in force (`memory_limit`, else `assigned_memory`), cut to 1 (the
largest of a window's records when it has several, as around a restart). A
task "jumps" in a window when its relative peak rises by at least
`--jump` (default 0.1 of the request) from its previous window. Windows
are aligned on the trace's clock (the tasks of a job that start together
share it) and, with `--by-age`, on each task's age instead (the pool's
alignment). For every window in which at least one task of a job jumps,
the script counts the job's tasks running then and those that jump, and
reports per job: the jump windows, and the share of the running siblings
that take part (mean, and the share of jump windows in which every
running sibling jumps).

With `--gcd FILE` it reads instead the Google 2011 per-task series of
GCD_VMs.tar.gz (../shared/data/google-2011/derived/: 1,600 files
`GCD_VMs/vm_<job>_<task>`, one day of 288 5-minute samples of CPU and
memory each, on one clock): 212 jobs with two tasks or more. Those files
carry no request, so a task's memory is relative to its own peak over the
day, as the pool's shapes are (and a jump is a rise by `--jump` of that
peak). Many jobs: the per-job lines give way to a summary over jobs.

Every run also reports, over the (task, jump window) pairs, the share of
the *other* running siblings that jump in the same window (the task
itself left out, so that a job's size does not count as coherence).

With `--pool POOL` (and `--gcd FILE`), the same figures for the usage
pool's draws instead (`data/usage-pool.txt.gz`: shapes normalised to
their peak, as the GCD series are made here): the job sizes of the GCD
sample, each job on a shape picked at random, its tasks at the job's
phase with probability `--share` (1 = `--pool-phase job`, 0 = `--pool-phase
task`), else at a phase of their own, one day of 288 samples each, over
`--draws` draws. It tells which pool phase is nearer the real siblings.

It is an analysis, not a fixture: nothing in `cargo test` reads it.

    python3 scripts/reference/sibling_jumps.py \
        [--dir ../shared/data/google-2019/instance_usage | --gcd FILE] \
        [--jump 0.1] [--by-age] [--pool data/usage-pool.txt.gz --share 0,1]
"""

import argparse
import csv
import glob
import gzip
import os
import random
import tarfile
from collections import defaultdict

WINDOW_US = 300_000_000


def load(directory):
    """{job: {task_file: {window: relative peak}}}, windows on the trace's
    clock."""
    jobs = defaultdict(dict)
    for path in sorted(glob.glob(os.path.join(directory, "*", "*.csv"))):
        job = os.path.basename(os.path.dirname(path))
        series = {}
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                req = float(row["memory_limit"] or 0) or float(row["assigned_memory"] or 0)
                if req <= 0:
                    continue
                w = int(row["time"]) // WINDOW_US
                # several records in one window (a restart): its peak
                v = min(float(row["max_memory_usage"]) / req, 1.0)
                series[w] = max(series.get(w, 0.0), v)
        if series:
            jobs[job][os.path.basename(path)] = series
    return jobs


def load_gcd(path):
    """{job: {task: {sample: memory / its peak}}} from GCD_VMs.tar.gz; jobs
    with two tasks or more."""
    jobs = defaultdict(dict)
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            name = os.path.basename(m.name)
            parts = name.split("_")
            if not m.isfile() or len(parts) != 3 or parts[0] != "vm":
                continue
            mem = []
            for line in tar.extractfile(m).read().decode().split("\n"):
                f = line.split()
                if len(f) >= 2:
                    mem.append(float(f[1]))
            peak = max(mem, default=0.0)
            if peak > 0:
                jobs[parts[1]][name] = {w: v / peak for w, v in enumerate(mem)}
    return {j: t for j, t in jobs.items() if len(t) >= 2}


def load_pool_shapes(path):
    """The memory shapes of a usage pool file, each relative to its peak."""
    shapes = []
    with gzip.open(path, "rt") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "series" and len(fields) >= 5:
                mem = [float(x) for x in fields[4].split(",")]
                peak = max(mem, default=0.0)
                if peak > 0:
                    shapes.append([v / peak for v in mem])
    return shapes


def pool_jobs(shapes, sizes, share, rnd, samples=288):
    """{job: {task: {sample: value}}}: one draw of jobs of the given sizes
    from the pool's shapes, each task at its job's phase with probability
    `share`, else at a phase of its own."""
    jobs = {}
    for k, n in enumerate(sizes):
        shape = rnd.choice(shapes)
        job_phase = rnd.randrange(len(shape))
        tasks = {}
        for t in range(n):
            phase = job_phase if rnd.random() < share else rnd.randrange(len(shape))
            tasks[t] = {w: shape[(w + phase) % len(shape)] for w in range(samples)}
        jobs[k] = tasks
    return jobs


def others_share(per):
    """Shares, over a job's (task, jump window) pairs, of the other running
    siblings that jump in the same window."""
    shares = []
    for i, (_, jumped) in enumerate(per):
        for w in jumped:
            others = [j for k, (r, j) in enumerate(per) if k != i and w in r]
            if others:
                shares.append(sum(1 for j in others if w in j) / len(others))
    return shares


def jumps(series, threshold, by_age):
    """(windows in which the task runs, windows in which it jumps), on the
    trace's clock or by age."""
    ws = sorted(series)
    start = ws[0]
    key = (lambda w: w - start) if by_age else (lambda w: w)
    running = {key(w) for w in ws}
    jumped = {
        key(b) for a, b in zip(ws, ws[1:]) if b == a + 1 and series[b] - series[a] >= threshold
    }
    return running, jumped


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "..", "..", "shared", "data", "google-2019", "instance_usage")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=default)
    ap.add_argument("--gcd", help="GCD_VMs.tar.gz (Google 2011 per-task series) instead of --dir")
    ap.add_argument("--jump", type=float, default=0.1)
    ap.add_argument("--by-age", action="store_true")
    ap.add_argument("--pool", help="usage pool file: report its draws (needs --gcd for the job sizes)")
    ap.add_argument("--share", default="0,1", help="with --pool: shares of tasks at the job's phase")
    ap.add_argument("--draws", type=int, default=4, help="with --pool: draws per share")
    a = ap.parse_args()
    jobs = load_gcd(a.gcd) if a.gcd else load(a.dir)
    if not jobs:
        raise SystemExit(f"{a.gcd or a.dir}: no job with tasks")
    if a.pool:
        if not a.gcd:
            raise SystemExit("--pool needs --gcd (the job sizes of the GCD sample)")
        shapes = load_pool_shapes(a.pool)
        if not shapes:
            raise SystemExit(f"{a.pool}: no series")
        sizes = [len(t) for t in jobs.values()]
        rises = [sum(1 for x, y in zip(m, m[1:]) if y - x >= a.jump) / (len(m) - 1) for m in shapes]
        print(f"pool {a.pool}: {len(shapes)} shapes; a shape jumps in {sum(rises) / len(rises):.3f} "
              f"of its windows on average")
        for share in (float(x) for x in a.share.split(",")):
            means = []
            for draw in range(a.draws):
                drawn = pool_jobs(shapes, sizes, share, random.Random(draw))
                shares = []
                for tasks in drawn.values():
                    shares += others_share([jumps(s, a.jump, a.by_age) for s in tasks.values()])
                means.append(sum(shares) / len(shares) if shares else 0.0)
            print(f"pool {a.pool}, {len(sizes)} jobs of the GCD sizes, share at the job's phase "
                  f"{share}: share of the other running siblings that jump with a task: mean "
                  f"{sum(means) / len(means):.3f} over {a.draws} draws "
                  f"({', '.join(f'{m:.3f}' for m in means)})")
        return
    scale = "its peak over the day" if a.gcd else "the request"
    print(f"jump: a rise of the 5-minute peak by >= {a.jump} of {scale}; "
          f"windows aligned on {'each task age' if a.by_age else 'the trace clock'}")
    all_shares, all_whole, job_means, all_others = [], 0, [], []
    task_windows, task_jumps = 0, 0
    for job, tasks in sorted(jobs.items()):
        per = [jumps(s, a.jump, a.by_age) for s in tasks.values()]
        all_others += others_share(per)
        task_windows += sum(len(r) for r, _ in per)
        task_jumps += sum(len(j) for _, j in per)
        windows = sorted(set().union(*(j for _, j in per)))
        shares, whole = [], 0
        for w in windows:
            run = sum(1 for r, _ in per if w in r)
            jump = sum(1 for r, j in per if w in j)
            shares.append(jump / run)
            whole += jump == run
        all_shares += shares
        all_whole += whole
        if windows:
            mean = sum(shares) / len(shares)
            job_means.append(mean)
            if len(jobs) <= 20:
                print(f"job {job}: {len(tasks)} tasks, {len(windows)} jump windows; "
                      f"share of running siblings that jump: mean {mean:.2f}; "
                      f"every sibling jumps in {whole} of {len(windows)}")
        elif len(jobs) <= 20:
            print(f"job {job}: {len(tasks)} tasks, no jump")
    if len(jobs) > 20 and all_shares:
        job_means.sort()
        tasks = sum(len(t) for t in jobs.values())
        print(f"{len(jobs)} jobs ({tasks} tasks), {len(job_means)} with a jump, "
              f"{len(all_shares)} jump windows; share of running siblings that jump: "
              f"mean {sum(all_shares) / len(all_shares):.2f} over windows, "
              f"median {job_means[len(job_means) // 2]:.2f} over jobs "
              f"(quartiles {job_means[len(job_means) // 4]:.2f} - "
              f"{job_means[3 * len(job_means) // 4]:.2f}); "
              f"every sibling jumps in {all_whole} of {len(all_shares)} windows; "
              f"by chance a task jumps in {task_jumps / task_windows:.3f} of its windows")
    if all_others:
        print(f"share of the other running siblings that jump with a task: mean "
              f"{sum(all_others) / len(all_others):.3f} over {len(all_others)} (task, jump window) pairs")


if __name__ == "__main__":
    main()
