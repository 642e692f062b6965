#!/usr/bin/env python3
"""A markdown table of Nsight Compute's text output, one row per kernel (standard library only).

    ncu --metrics "$(python3 scripts/ncu-table.py --metrics)" ... > ncu.txt
    python3 scripts/ncu-table.py [--title TITLE] < ncu.txt

ncu prints, per profiled launch, a line `  NAME (GX, GY, GZ)x(BX, BY, BZ), Context ...` and then one
line per metric: `NAME UNIT VALUE` (the unit left out for plain numbers). Launches of one kernel
are averaged. Columns:

- threads: threads launched (grid x block): one per cell, listed cell, sample or band cell;
- time: `gpu__time_duration.sum`;
- registers: `launch__registers_per_thread`;
- occupancy: achieved, `sm__warps_active.avg.pct_of_peak_sustained_active`;
- DRAM: `dram__bytes.sum.per_second` and `dram__throughput.avg.pct_of_peak_sustained_elapsed`;
- instructions per thread: `smsp__inst_executed.sum x 32 / threads` (warp instructions, each
  counted for the 32 lanes: how docs/fluid/performance.md counts instructions per cell);
- warp efficiency: `smsp__thread_inst_executed_per_inst_executed.ratio`, the mean of active lanes
  per executed warp instruction, out of 32.

Lines that are neither (the program's own output, ncu's `==PROF==` lines) are skipped.
"""

import argparse
import re
import sys

METRICS = [
    "gpu__time_duration.sum",
    "launch__registers_per_thread",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__bytes.sum.per_second",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
]

HEADER = re.compile(
    r"^\s+([A-Za-z_][\w:<>]*)\s*\((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\)"
)
METRIC = re.compile(r"^\s+([a-z][\w.]*__[\w.]+)\s+(?:(\S+)\s+)?([-\d.,]+)\s*$")

# Factors to microseconds and to GB/s.
TIME = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
        "second": 1e6, "s": 1e6}
RATE = {"byte/second": 1e-9, "Kbyte/second": 1e-6, "Mbyte/second": 1e-3, "Gbyte/second": 1.0,
        "Tbyte/second": 1e3, "B/s": 1e-9, "KB/s": 1e-6, "MB/s": 1e-3, "GB/s": 1.0, "TB/s": 1e3}


def number(text):
    return float(text.replace(",", ""))


def parse(lines):
    """Launches as (kernel, threads, {metric: value in the table's units})."""
    launches = []
    for line in lines:
        m = HEADER.match(line)
        if m:
            g = [int(v) for v in m.groups()[1:]]
            launches.append((m.group(1), g[0] * g[1] * g[2] * g[3] * g[4] * g[5], {}))
            continue
        m = METRIC.match(line)
        if not m or not launches:
            continue
        name, unit, value = m.group(1), m.group(2) or "", number(m.group(3))
        if name == "gpu__time_duration.sum":
            value *= TIME.get(unit, float("nan"))
        elif name == "dram__bytes.sum.per_second":
            value *= RATE.get(unit, float("nan"))
        launches[-1][2][name] = value
    return launches


def table(launches, title=None):
    order = []
    groups = {}
    for kernel, threads, values in launches:
        if kernel not in groups:
            order.append(kernel)
            groups[kernel] = []
        groups[kernel].append((threads, values))
    out = []
    if title:
        out.append(title)
    out.append("| kernel | launches | threads | time (us) | registers | achieved occupancy | "
               "DRAM GB/s | DRAM % of peak | instructions per thread | warp efficiency |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for kernel in order:
        rows = groups[kernel]

        def mean(name):
            vals = [v[name] for _, v in rows if name in v]
            return sum(vals) / len(vals) if vals else None

        def fmt(v, spec, suffix=""):
            return "-" if v is None else format(v, spec) + suffix

        threads = sum(t for t, _ in rows) / len(rows)
        inst = mean("smsp__inst_executed.sum")
        per_thread = None if inst is None or threads == 0 else inst * 32 / threads
        out.append("| `{}` | {} | {:,.0f} | {} | {} | {} | {} | {} | {} | {} |".format(
            kernel, len(rows), threads,
            fmt(mean("gpu__time_duration.sum"), ",.1f"),
            fmt(mean("launch__registers_per_thread"), ".0f"),
            fmt(mean("sm__warps_active.avg.pct_of_peak_sustained_active"), ".1f", " %"),
            fmt(mean("dram__bytes.sum.per_second"), ",.0f"),
            fmt(mean("dram__throughput.avg.pct_of_peak_sustained_elapsed"), ".1f", " %"),
            fmt(per_thread, ",.0f"),
            fmt(mean("smsp__thread_inst_executed_per_inst_executed.ratio"), ".1f", " / 32"),
        ))
    return "\n".join(out)


SAMPLE = """==PROF== Connected to process 1234
  lbm_boundary_acm_mrt_fp32 (491, 1, 1)x(128, 1, 1), Context 1, Stream 14, Device 0, CC 9.0
    Section: Command line profiler metrics
    ----------------------------------------------------- ------------- ------------
    Metric Name                                             Metric Unit Metric Value
    ----------------------------------------------------- ------------- ------------
    dram__bytes.sum.per_second                             Tbyte/second         1.20
    dram__throughput.avg.pct_of_peak_sustained_elapsed                %        25.00
    gpu__time_duration.sum                                      usecond        12.50
    launch__registers_per_thread                        register/thread          128
    sm__warps_active.avg.pct_of_peak_sustained_active                 %        40.00
    smsp__inst_executed.sum                                        inst    3,928,000
    smsp__thread_inst_executed_per_inst_executed.ratio                         30.5
    ----------------------------------------------------- ------------- ------------
  lbm_boundary_acm_mrt_fp32 (491, 1, 1)x(128, 1, 1), Context 1, Stream 14, Device 0, CC 9.0
    gpu__time_duration.sum                                      nsecond    13,500
    smsp__inst_executed.sum                                        inst    3,928,000
"""


def self_test():
    launches = parse(SAMPLE.splitlines())
    assert len(launches) == 2 and launches[0][1] == 491 * 128, launches
    t = table(launches)
    row = t.splitlines()[-1]
    assert "| `lbm_boundary_acm_mrt_fp32` | 2 | 62,848 | 13.0 | 128 | 40.0 % | 1,200 |" in row, row
    assert "| 25.0 % | 2,000 | 30.5 / 32 |" in row, row
    print("ncu-table self-test passed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--title", help="a line printed above the table")
    ap.add_argument("--metrics", action="store_true",
                    help="print the metrics to pass to ncu --metrics and exit")
    ap.add_argument("--self-test", action="store_true", help="parse a built-in sample")
    a = ap.parse_args()
    if a.metrics:
        print(",".join(METRICS))
        return
    if a.self_test:
        self_test()
        return
    launches = parse(sys.stdin)
    if not launches:
        print("(no profiled launches in the input)")
        return
    print(table(launches, a.title))


if __name__ == "__main__":
    main()
