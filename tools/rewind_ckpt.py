#!/usr/bin/python3
"""Inspect Rewind disk checkpoint files (rewind-ckpt-<run id>.<rank>-of-<n>.h5).

    rewind_ckpt.py FILE_OR_DIR ... [--verify] [--slot N [--save OUT.npy]]

Prints, for each file, its identity (format version, run id, rank, contents, the schedule
record of the run that wrote it, the decomposition) and one line per full slot: step, time,
step size, running cost and stamp (and, for an adaptive run, the length of its time record).
With --verify every full slot is checked as a restart
checks it: its data are read chunk by chunk, which makes HDF5 check each chunk's Fletcher32
checksum, and its stamp must match its step tag and its chunks' checksums (data that are not
the step the tag names); a slot that fails is reported DAMAGED and the exit status is 1, as
is an adaptive time record that fails its checksums. A
tag table (step, time, dt, running_cost, stamp) that fails its checksum is reported and the
file counts as damaged (a restart refuses it). For a directory, the rank files of each run
found there are counted: a missing one is named (a restart refuses the directory) and the
exit status is 1. With --slot N the vectors of slot N are summarised (min, max, 2-norm);
--save writes them to a .npy file (shape [nvec, local_length]; one file given).

Exit status: 0 on success, 1 for a file that is missing, not HDF5, not a Rewind checkpoint
file, damaged or failing --verify, a directory missing a rank's file, or wrong arguments;
77 when h5py or numpy is missing (the tests skip on 77). Needs Debian's python3-h5py and
python3-numpy; run it with /usr/bin/python3.
"""
import os
import re
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"rewind_ckpt.py: {e}: install python3-h5py and python3-numpy", file=sys.stderr)
    sys.exit(77)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


NAME = re.compile(r"^rewind-ckpt-([0-9A-Za-z_-]+)\.([0-9]+)-of-([0-9]+)\.h5$")


def files_of(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            out += sorted(os.path.join(a, f) for f in os.listdir(a)
                          if f.startswith("rewind-ckpt-") and f.endswith(".h5"))
        else:
            out.append(a)
    return out


def missing_ranks(d):
    """A directory's files by run (run id and rank count, from the names): the rank files a
    restart would need and does not find there. Returns 1 when one is missing."""
    runs = {}
    for f in os.listdir(d):
        m = NAME.match(f)
        if m:
            runs.setdefault((m.group(1), int(m.group(3))), set()).add(int(m.group(2)))
    rc = 0
    for (run, n), ranks in sorted(runs.items()):
        lost = [r for r in range(n) if r not in ranks]
        if lost:
            names = ", ".join(f"rewind-ckpt-{run}.{r}-of-{n}.h5" for r in lost[:4])
            more = f" and {len(lost) - 4} more" if len(lost) > 4 else ""
            print(f"{d}: run {run} of {n} ranks: the file of rank(s) "
                  f"{', '.join(str(r) for r in lost[:4])}{more} is missing ({names}{more}): "
                  f"a restart from this directory is refused", file=sys.stderr)
            rc = 1
    if len(runs) > 1:
        print(f"{d}: holds the files of {len(runs)} runs: "
              f"{', '.join(f'{r} ({n} ranks)' for r, n in sorted(runs))}; a restart uses the"
              f" one whose deck and rank count are its own", file=sys.stderr)
    return rc


FNV_INIT, FNV_PRIME, M64 = 14695981039346656037, 1099511628211, (1 << 64) - 1


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & M64
    return h


def slot_stamp(path, snaps, slot, step):
    """The stamp Rewind writes with a slot's tag: FNV-1a of the step (int64, little-endian)
    and of each chunk's stored Fletcher32 (the chunk's last 4 bytes), vectors in order;
    None when a chunk of the slot is not in the file."""
    h = fnv1a(FNV_INIT, int(step).to_bytes(8, "little", signed=True))
    nvec, length = snaps.shape[1], snaps.shape[2]
    cn = snaps.chunks[2]
    with open(path, "rb") as raw:
        for k in range(nvec):
            for c in range(0, length, cn):
                info = snaps.id.get_chunk_info_by_coord((slot, k, c))
                if info.byte_offset is None or info.size < 4:
                    return None
                raw.seek(info.byte_offset + info.size - 4)
                tail = raw.read(4)
                if len(tail) != 4:
                    return None
                h = fnv1a(h, tail)
    return h


def verify_slot(path, f, i, step, stamps):
    """Checks slot i as a restart does: every chunk against its Fletcher32 (HDF5 checks it
    on the read), and the stamp stored with the tag against the step and the chunks'
    checksums (a chunk written over by a write the crash interrupted before its tag, or a
    tag that names another step, fails there). Returns None or why the slot is damaged."""
    snaps = f["snapshots"]
    cn = snaps.chunks[2]
    try:
        for k in range(snaps.shape[1]):
            for c in range(0, snaps.shape[2], cn):
                snaps[i, k, c:c + cn]
    except OSError as e:
        return str(e)
    if stamps is None:
        return None
    got = slot_stamp(path, snaps, i, step)
    if got is None:
        return "a chunk of the slot is not in the file"
    if got != int(stamps[i]):
        return ("its stamp does not match its step tag and its chunks' checksums (the data are"
                " not the step the tag names: a write interrupted between the data and the"
                " tag, or a damaged tag); a restart does not use it")
    return None


def table(f, name, path):
    """A 1-D tag table, or None with a message when it cannot be read (a failed checksum)."""
    try:
        return f[name][...]
    except (OSError, KeyError) as e:
        print(f"  {name} table: DAMAGED: {e}")
        print(f"{path}: its {name} table cannot be read: the file is damaged and a restart"
              f" refuses it", file=sys.stderr)
        return None


def show(path, verify, slot, save):
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        print(f"{path}: cannot open: {e}", file=sys.stderr)
        return 1
    with f:
        a = f.attrs
        if text(a.get("format", "")) != "rewind-checkpoint":
            print(f"{path}: not a Rewind checkpoint file (no format attribute)", file=sys.stderr)
            return 1
        print(f"{path}")
        print(f"  format version {int(a['version'])}, run {text(a['run_id'])}, rank "
              f"{int(a['rank'])} of {int(a['nranks'])}, contents {text(a['contents'])}, "
              f"{int(a['nvec'])} vector(s) of {int(a['local_length'])} values, "
              f"{int(a['slots'])} slots")
        for key in ("info", "decomposition"):
            if key in a and text(a[key]):
                print(f"  {key}: {text(a[key])}")
        steps = table(f, "step", path)
        if steps is None:
            return 1
        cols = {}
        for k in ("time", "dt", "running_cost", "stamp"):
            if k in f:
                cols[k] = table(f, k, path)
                if cols[k] is None:
                    return 1
        full = [i for i, s in enumerate(steps) if s >= 0]
        print(f"  {len(full)} full slot(s)")
        print(f"  {'slot':>5} {'step':>10} {'time':>22} {'dt':>22} {'running_cost':>22}"
              f" {'stamp':>18}")
        for i in full:
            line = f"  {i:5d} {int(steps[i]):10d} {cols['time'][i]:22.15g} {cols['dt'][i]:22.15g}"
            if "running_cost" in cols:
                line += f" {cols['running_cost'][i]:22.15g} {int(cols['stamp'][i]):016x}"
            print(line)
        bad = 0
        n = int(a["local_length"])
        # an adaptive run's accepted times (written before each disk snapshot of its first
        # sweep; a restart replays them): their count, and with --verify their checksums
        if "times" in f and f["times"].shape[0] > 0:
            nt = f["times"].shape[0]
            try:
                t = f["times"][...] if verify else None
                span = f", t = {t[0]:.17g} .. {t[-1]:.17g}" if t is not None else ""
                print(f"  adaptive time record: {nt} times (steps 0..{nt - 1}){span}"
                      + (": checksums ok" if verify else ""))
            except OSError as e:
                print(f"  adaptive time record: {nt} times: DAMAGED: {e}")
                bad = 1
        if verify:
            for i in full:
                why = verify_slot(path, f, i, steps[i], cols.get("stamp"))
                if why is None:
                    print(f"  slot {i} (step {int(steps[i])}): checksums ok")
                else:
                    print(f"  slot {i} (step {int(steps[i])}): DAMAGED: {why}")
                    bad = 1
        if slot is not None:
            if slot not in full:
                print(f"{path}: slot {slot} is empty or out of range (full: {full})",
                      file=sys.stderr)
                return 1
            v = f["snapshots"][slot][:, :n]
            for k in range(v.shape[0]):
                print(f"  slot {slot} vector {k}: min {v[k].min():.6g} max {v[k].max():.6g}"
                      f" |.|_2 {np.linalg.norm(v[k]):.6g}")
            if save:
                np.save(save, v)
                print(f"  saved {save}")
        return bad


def main(argv):
    args, verify, slot, save = [], False, None, None
    i = 0
    while i < len(argv):
        if argv[i] == "--verify":
            verify = True
        elif argv[i] == "--slot" and i + 1 < len(argv):
            try:
                slot = int(argv[i + 1])
            except ValueError:
                print(f"rewind_ckpt.py: --slot takes a slot number, not '{argv[i + 1]}'",
                      file=sys.stderr)
                return 1
            i += 1
        elif argv[i] == "--save" and i + 1 < len(argv):
            save = argv[i + 1]
            i += 1
        elif argv[i] in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            args.append(argv[i])
        i += 1
    unknown = [a for a in args if a.startswith("--")]
    if unknown:
        print(f"rewind_ckpt.py: unknown option {unknown[0]} (see --help)", file=sys.stderr)
        return 1
    if save is not None and slot is None:
        print("rewind_ckpt.py: --save needs --slot N", file=sys.stderr)
        return 1
    files = files_of(args)
    if not files:
        print("rewind_ckpt.py: no checkpoint files given (see --help)", file=sys.stderr)
        return 1
    if save is not None and len(files) > 1:
        print(f"rewind_ckpt.py: --save writes one file, and {len(files)} checkpoint files are"
              f" given: name one rank's file", file=sys.stderr)
        return 1
    rc = 0
    for a in args:
        if os.path.isdir(a):
            rc |= missing_ranks(a)
    for p in files:
        if not os.path.exists(p):
            print(f"{p}: no such file", file=sys.stderr)
            rc = 1
            continue
        rc |= show(p, verify, slot, save)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
