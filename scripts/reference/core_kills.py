#!/usr/bin/env python3
"""What the failed applications of a replay are made of: the first core OOM
kill of each failed application over several draws of the usage pool,
sorted into kinds, and the largest kill of elastic components in one
sample (docs/results.md, "What the failures over draws are made of").

For every seed N in --seeds (default 0-9) it runs

    RUST_LOG=sim=debug tailor replay --workload W --config C --no-baseline

with C holding `seed = N` (plus the lines of --config, if given), reads
the simulator's `oom kill` debug lines (fields `app`, `class`, `age_s`,
`alloc_mem_bytes`, `peak_mem_bytes`, `request_mem_bytes`,
`forecast_mem_bytes`, `forecast_mem_std_bytes`), keeps the first core kill
of each application (a core kill fails its application) and sorts it,
in shares of the request, by the first rule that matches:

* ceiling: allocation >= 0.97 of the request (the usage reached the
  request; the baseline's allocation is the request);
* within 2%: the peak crossed the allocation by at most 0.02;
* 2-5%: by at most 0.05;
* jump to the request: the peak reached 0.95 of the request or more;
* larger: the rest.

It also counts the kills within the first hour of a component's life,
those whose forecast sigma was under 1% of the request, and, per seed,
the largest number of elastic components of one application killed at
the same age.

    python3 scripts/reference/core_kills.py \\
        --workload google2011:../shared/data/google-2011-parts-0-3

About 40 s a seed on parts 0-3 (2 cores); under a second on the bundled
slice (`--workload bundled`, the default). It runs the release binary
(`cargo build --release` first) or the one `--tailor PATH` names.
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

FIELD = re.compile(r'(\w+)=("?[\w.+-]+"?)')


def seeds_of(text):
    """'0-9' or '0,3,5' -> list of ints."""
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def kills(tailor, workload, seed, extra):
    """The parsed `oom kill` lines of one replay."""
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(f"seed = {seed}\n")
        if extra:
            with open(extra) as e:
                f.write(e.read())
        cfg = f.name
    try:
        cmd = [tailor, "replay", "--config", cfg, "--no-baseline"]
        if workload != "bundled":
            cmd[2:2] = ["--workload", workload]
        env = dict(os.environ, RUST_LOG="sim=debug")
        try:
            run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        except OSError as e:
            sys.exit(f"{tailor}: {e} (build it with `cargo build --release`, or pass --tailor)")
        if run.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{run.stderr[-2000:]}")
        for line in (run.stdout + run.stderr).splitlines():
            if "oom kill" in line:
                yield {k: v.strip('"') for k, v in FIELD.findall(line)}
    finally:
        os.unlink(cfg)


def kind(k):
    r = float(k["request_mem_bytes"])
    alloc = float(k["alloc_mem_bytes"]) / r
    peak = float(k["peak_mem_bytes"]) / r
    over = peak - alloc
    if alloc >= 0.97:
        return "ceiling (allocation >= 0.97 of the request)"
    if over <= 0.02:
        return "crossed by <= 2% of the request"
    if over <= 0.05:
        return "crossed by 2-5%"
    if peak >= 0.95:
        return "jump to the request (peak >= 0.95)"
    return "crossed by > 5%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="bundled")
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--tailor", default="target/release/tailor")
    ap.add_argument("--config", help="more TOML lines for every run")
    a = ap.parse_args()
    kinds = collections.Counter()
    young = calm = total = 0
    for seed in seeds_of(a.seeds):
        first = {}
        elastic = collections.Counter()
        for k in kills(a.tailor, a.workload, seed, a.config):
            if k.get("class") == "core":
                first.setdefault(k["app"], k)
            else:
                elastic[(k["app"], k["age_s"])] += 1
        for k in first.values():
            kinds[kind(k)] += 1
            r = float(k["request_mem_bytes"])
            young += float(k["age_s"]) <= 3600.0
            calm += float(k["forecast_mem_std_bytes"]) / r < 0.01
        total += len(first)
        big = elastic.most_common(1)
        big = f"{big[0][1]} (application {big[0][0][0]})" if big else "0"
        print(f"seed {seed}: {len(first)} failed by a core kill; "
              f"most elastic components killed at one age: {big}")
    print(f"\n{total} first core kills over {len(seeds_of(a.seeds))} seeds:")
    for name, n in kinds.most_common():
        print(f"  {n:4d}  {name}")
    print(f"  {young:4d}  within the component's first hour")
    print(f"  {calm:4d}  with a forecast sigma under 1% of the request")


if __name__ == "__main__":
    main()
