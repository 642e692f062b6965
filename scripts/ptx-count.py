#!/usr/bin/env python3
"""Instruction counts of PTX entry points, in total and per category.

    python3 scripts/ptx-count.py [PTX] [--entry NAME ...] [--ops] [--ptxas PATH [--arch sm_90]]

PTX defaults to target/ptx/murmur_kernels.ptx; without --entry every `.entry` is listed. An
instruction is a PTX statement (up to its `;`) that is not a directive (`.reg`, `.param`, ...), a
label or a brace; a guard (`@%p1`) is dropped. Categories by opcode: fma (`fma.*`, `mad.*`), mul,
add (`add.*`, `sub.*`), div (`div.*`, `rcp.*`), ld, st, other; the float columns (`f`) count the
`.f32` / `.f64` ones of fma, mul, add and div.

Besides the static count (every instruction of the entry once) it gives two paths: the entry's
basic blocks form a graph (labels and branches; back edges are dropped, so a loop body counts
once), and of the paths from the entry to a `ret` that pass through the block with the most
`st.` instructions (a cell update's population store), `min` is the one with the fewest
instructions and `max` the one with the most. For `lbm_stream_collide_*` that is the cell update
without forcing and without storing the fields (min) and with both (max). Panic paths (`exit`
without `ret`) are not counted in the paths.

These kernels are straight-line code apart from a few branches (bounds, forcing, fields, the
boundary kinds), so the counts along a path are a good proxy for what one thread executes; they
are PTX, not SASS (ptxas still schedules, allocates registers and expands `div.rn.f32` into a
short subroutine).

With --ptxas, that ptxas compiles the PTX (its first line, the source-hash stamp, removed) and
each static row gets the entry's registers and spill bytes (`ptxas -v`) and its static SASS
instruction count: the size of its `.text.<entry>` section in the cubin over 16 bytes (sm_70 and
later encode every instruction in 16 bytes; the count includes the few padding instructions that
align the section end).
"""

import argparse
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile

CATEGORIES = ["fma", "mul", "add", "div", "ld", "st", "other"]
FLOAT_CATS = ["fma", "mul", "add", "div"]
LABEL = re.compile(r"^\s*([$\w]+):\s*(.*)$")
GUARD = re.compile(r"^@!?%\w+\s+")


def category(op):
    root = op.split(".")[0]
    if root in ("fma", "mad"):
        return "fma"
    if root == "mul":
        return "mul"
    if root in ("add", "sub"):
        return "add"
    if root in ("div", "rcp"):
        return "div"
    if root in ("ld", "ldu"):
        return "ld"
    if root == "st":
        return "st"
    return "other"


def is_float(op):
    return ".f32" in op or ".f64" in op


def entries(text):
    """Yields (name, body text) of every `.entry`."""
    for m in re.finditer(r"\.entry\s+(\w+)\s*\(", text):
        name = m.group(1)
        start = text.index("{", text.index(")", m.end()))
        depth, i = 0, start
        while True:
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        yield name, text[start + 1 : i]


def statements(body):
    """Labels (as ('label', name)) and instructions (as ('insn', text)) in order."""
    out = []
    pending = ""
    for line in body.splitlines():
        line = line.split("//", 1)[0].strip()
        while line:
            m = LABEL.match(line) if not pending else None
            if m:
                out.append(("label", m.group(1)))
                line = m.group(2).strip()
                continue
            if line in ("{", "}") and not pending:
                line = ""
                continue
            if ";" in line:
                head, line = line.split(";", 1)
                stmt = (pending + " " + head).strip()
                pending = ""
                line = line.strip()
                if stmt.startswith("{") and not stmt.startswith("{_"):
                    stmt = stmt[1:].strip()
                if stmt and not stmt.startswith("."):
                    out.append(("insn", stmt))
            else:
                pending += " " + line
                line = ""
    return out


def opcode(stmt):
    s = GUARD.sub("", stmt)
    return s.split()[0].rstrip(",")


class Block:
    def __init__(self, label):
        self.label = label
        self.insns = []
        self.succ = []
        self.ret = False


def blocks(stmts):
    """Basic blocks with their successors."""
    out = [Block(None)]
    for kind, s in stmts:
        if kind == "label":
            if out[-1].insns or out[-1].label is not None:
                out.append(Block(s))
            else:
                out[-1].label = s
            continue
        b = out[-1]
        b.insns.append(s)
        op = opcode(s)
        root = op.split(".")[0]
        if root in ("bra", "ret", "exit", "trap"):
            out.append(Block(None))
    out = [b for b in out if b.insns or b.label is not None]
    index = {b.label: i for i, b in enumerate(out) if b.label is not None}
    for i, b in enumerate(out):
        last = b.insns[-1] if b.insns else ""
        op = opcode(last) if last else ""
        root = op.split(".")[0]
        guarded = last.startswith("@")
        if root == "bra":
            b.succ.append(index[last.split()[-1]])
            if guarded and i + 1 < len(out):
                b.succ.append(i + 1)
        elif root == "ret":
            b.ret = True
        elif root in ("exit", "trap"):
            pass
        elif i + 1 < len(out):
            b.succ.append(i + 1)
    return out


def counts(insns):
    c = collections.Counter()
    for s in insns:
        op = opcode(s)
        cat = category(op)
        c[cat] += 1
        if cat in FLOAT_CATS and is_float(op):
            c["f" + cat] += 1
        c["total"] += 1
    return c


def acyclic(bs):
    """Successor lists without back edges (DFS from the entry)."""
    succ = [list(b.succ) for b in bs]
    state = [0] * len(bs)
    order = []
    stack = [(0, iter(succ[0]))]
    state[0] = 1
    while stack:
        n, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            state[n] = 2
            order.append(n)
            stack.pop()
            continue
        if state[nxt] == 1:
            succ[n] = [s for s in succ[n] if s != nxt]
        elif state[nxt] == 0:
            state[nxt] = 1
            stack.append((nxt, iter(list(succ[nxt]))))
    order.reverse()
    return succ, order


def paths(bs):
    """(min, max) instruction paths entry -> ret through the block with the most stores, as
    lists of block indices; None if there is none."""
    stores = [sum(1 for s in b.insns if category(opcode(s)) == "st") for b in bs]
    if not bs or max(stores) == 0:
        return None
    via = stores.index(max(stores))
    succ, order = acyclic(bs)
    weight = [len(b.insns) for b in bs]
    pos = {n: i for i, n in enumerate(order)}

    def best(pick):
        # to_end[n]: best path from n to a ret; from_entry[n]: best path from the entry to n.
        to_end = {}
        for n in reversed(order):
            cands = [to_end[s] for s in succ[n] if s in to_end]
            if bs[n].ret:
                cands.append((0, []))
            if cands:
                w, p = pick(cands, key=lambda x: x[0])
                to_end[n] = (w + weight[n], [n] + p)
        from_entry = {0: (weight[0], [0])}
        for n in order:
            if n not in from_entry:
                continue
            for s in succ[n]:
                cand = (from_entry[n][0] + weight[s], from_entry[n][1] + [s])
                if s not in from_entry or pick([from_entry[s], cand], key=lambda x: x[0]) is cand:
                    from_entry[s] = cand
        if via not in from_entry or via not in to_end or via not in pos:
            return None
        return from_entry[via][1][:-1] + to_end[via][1]

    return best(min), best(max)


def text_sizes(elf):
    """{section name: size} of a 64-bit little-endian ELF file's `.text.*` sections."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = {}
    for name, _type, _flags, _addr, _offset, size in headers:
        end = elf.index(b"\0", names_at + name)
        n = elf[names_at + name : end].decode()
        if n.startswith(".text."):
            out[n[len(".text.") :]] = size
    return out


def ptxas_info(ptxas, arch, text):
    """{entry: (registers, spill stores + loads in bytes, SASS instructions)} from `ptxas -v`
    and the cubin."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(text.split("\n", 1)[1] if text.startswith("//") else text)
        cubin = os.path.join(d, "k.cubin")
        r = subprocess.run(
            [ptxas, "-arch=" + arch, "-v", src, "-o", cubin],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            sys.exit("ptxas failed:\n" + r.stderr)
        with open(cubin, "rb") as f:
            sizes = text_sizes(f.read())
    info, current, spills = {}, None, 0
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current, spills = m.group(1), 0
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current:
            spills = int(m.group(1)) + int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            info[current] = (int(m.group(1)), spills, sizes.get(current, 0) // 16)
            current = None
    return info


def row(name, c, regs=None):
    cells = [name, str(c["total"])]
    for cat in CATEGORIES:
        v = str(c[cat])
        if cat in FLOAT_CATS:
            v += " (%d f)" % c["f" + cat]
        cells.append(v)
    if regs is not None:
        cells.append(regs)
    return "| " + " | ".join(cells) + " |"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ptx", nargs="?", default="target/ptx/murmur_kernels.ptx")
    ap.add_argument("--entry", action="append", help="entry name (repeatable; prefix match with a trailing *)")
    ap.add_argument("--ops", action="store_true", help="also list every opcode with its count (static)")
    ap.add_argument("--ptxas", help="ptxas binary: adds registers and spill bytes per entry")
    ap.add_argument("--arch", default="sm_90", help="ptxas -arch (default sm_90)")
    a = ap.parse_args()
    text = open(a.ptx).read()
    info = ptxas_info(a.ptxas, a.arch, text) if a.ptxas else None
    found = False
    extra = ["registers / spill B", "SASS"] if info is not None else []
    print("| entry / path | total | " + " | ".join(CATEGORIES + extra) + " |")
    print("|---" * (len(CATEGORIES) + 2 + len(extra)) + "|")
    ops_lists = []
    for name, body in entries(text):
        if a.entry and not any(
            name == e or (e.endswith("*") and name.startswith(e[:-1])) for e in a.entry
        ):
            continue
        found = True
        stmts = [s for k, s in statements(body) if k == "insn"]
        bs = blocks(statements(body))
        regs = None
        if info is not None:
            regs = "%d / %d | %d" % info[name] if name in info else "? | ?"
        print(row(name + " (static)", counts(stmts), regs))
        p = paths(bs)
        if p:
            for tag, path in zip(("min", "max"), p):
                if path:
                    insns = [s for n in path for s in bs[n].insns]
                    print(row(name + " (" + tag + " path)", counts(insns), " | " if regs else None))
        if a.ops:
            ops_lists.append((name, collections.Counter(opcode(s) for s in stmts)))
    for name, ops in ops_lists:
        print("\n" + name + ":")
        for op, n in sorted(ops.items(), key=lambda x: (-x[1], x[0])):
            print("  %6d  %s" % (n, op))
    if not found:
        sys.exit("no matching .entry in " + a.ptx)


if __name__ == "__main__":
    main()
