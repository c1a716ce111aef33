#!/usr/bin/python3
"""Inspect Rewind disk checkpoint files (rewind-ckpt-<run id>.<rank>-of-<n>.h5).

    rewind_ckpt.py FILE_OR_DIR ... [--verify] [--slot N [--save OUT.npy]]

Prints, for each file, its identity (format version, run id, rank, contents, the schedule
record of the run that wrote it, the decomposition) and one line per full slot: step, time,
step size, running cost and stamp. With --verify every full slot's data are read, which makes
HDF5 check each chunk's Fletcher32 checksum; a slot that fails is reported and the exit status
is 1. With --slot N the vectors of slot N are summarised (min, max, 2-norm); --save writes
them to a .npy file (shape [nvec, local_length]).

Exit status: 0 on success, 1 for a file that is missing, not HDF5, not a Rewind checkpoint
file, or fails --verify; 77 when h5py or numpy is missing (the tests skip on 77). Needs
Debian's python3-h5py and python3-numpy; run it with /usr/bin/python3.
"""
import os
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"rewind_ckpt.py: {e}: install python3-h5py and python3-numpy", file=sys.stderr)
    sys.exit(77)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def files_of(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            out += sorted(os.path.join(a, f) for f in os.listdir(a)
                          if f.startswith("rewind-ckpt-") and f.endswith(".h5"))
        else:
            out.append(a)
    return out


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
        steps = f["step"][...]
        cols = {k: f[k][...] for k in ("time", "dt", "running_cost", "stamp") if k in f}
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
        if verify:
            for i in full:
                try:
                    f["snapshots"][i]
                    print(f"  slot {i} (step {int(steps[i])}): checksums ok")
                except OSError as e:
                    print(f"  slot {i} (step {int(steps[i])}): DAMAGED: {e}")
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
            slot = int(argv[i + 1])
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
    files = files_of(args)
    if not files:
        print("rewind_ckpt.py: no checkpoint files given (see --help)", file=sys.stderr)
        return 1
    rc = 0
    for p in files:
        if not os.path.exists(p):
            print(f"{p}: no such file", file=sys.stderr)
            rc = 1
            continue
        rc |= show(p, verify, slot, save)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
