#!/usr/bin/env python3
"""Where a kernel's instructions go, from Nsight Compute's source page (standard library only).

    ncu --section SourceCounters -o k ... && ncu -i k.ncu-rep --page source --csv --print-source sass > k.csv
    python3 scripts/sass-hot.py k.csv [--top N]

Prints the kernel's executed warp instructions and stall samples in total, then per opcode (the
SASS mnemonic without its modifiers: `SHFL.IDX` -> `SHFL`), then the N hottest instructions with
their addresses. Columns are found by name, so ncu versions that add columns still parse.
"""

import argparse
import collections
import csv
import sys


def column(header, *words):
    exact = " ".join(words).lower()
    for i, name in enumerate(header):
        if name.strip().lstrip("# ").lower() == exact:
            return i
    for i, name in enumerate(header):
        if all(w.lower() in name.lower() for w in words):
            return i
    return None


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    with open(args.csv, newline="") as f:
        rows = [r for r in csv.reader(f)]
    start = next((i for i, r in enumerate(rows) if column(r, "source") is not None and column(r, "executed") is not None), None)
    if start is None:
        sys.exit(f"{args.csv}: no header with Source and Instructions Executed columns")
    header = rows[start]
    src = column(header, "source")
    addr = column(header, "address")
    ex = column(header, "instructions executed")
    stall = column(header, "warp stall sampling (all")
    body = [r for r in rows[start + 1 :] if len(r) > max(src, ex)]
    total = sum(number(r[ex]) for r in body)
    stalls = sum(number(r[stall]) for r in body) if stall is not None else 0.0
    print(f"{len(body)} SASS instructions, {total:.4g} warp instructions executed, {stalls:.4g} stall samples")
    ops = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for r in body:
        text = r[src].strip()
        words = [w for w in text.split() if not w.startswith("@")]
        op = words[0].split(".")[0] if words else "?"
        o = ops[op]
        o[0] += number(r[ex])
        o[1] += number(r[stall]) if stall is not None else 0.0
        o[2] += 1
    print("| opcode | static | executed | share | stall samples | share |")
    print("|---|---:|---:|---:|---:|---:|")
    for op, (e, s, n) in sorted(ops.items(), key=lambda kv: -kv[1][0])[:24]:
        print(f"| {op} | {n} | {e:.4g} | {100 * e / max(total, 1):.1f} % | {s:.4g} | {100 * s / max(stalls, 1):.1f} % |")
    print(f"hottest {args.top} by stall samples:")
    key = stall if stall is not None else ex
    for r in sorted(body, key=lambda r: -number(r[key]))[: args.top]:
        a = r[addr] if addr is not None else ""
        print(f"  {a:>8} {number(r[ex]):>10.4g} {number(r[key]):>8.4g}  {r[src].strip()}")


if __name__ == "__main__":
    main()
