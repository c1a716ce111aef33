#!/usr/bin/python3
"""Compares every dataset under GROUP (or the dataset GROUP itself) in two HDF5 files by the relative 2-norm of their
difference, ||a - b||_2 / ||a||_2 (an elementwise relative test, as h5diff -p does, fails on
entries near zero that the norm rightly ignores). Prints one line per dataset and exits 0 when
each is <= TOL, 1 when one is not, 77 when h5py/numpy are missing.
Usage: h5_relnorm.py A.h5 B.h5 GROUP TOL"""
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:
    print(f"h5_relnorm.py: {e}: install python3-h5py and python3-numpy", file=sys.stderr)
    sys.exit(77)


def main():
    a_path, b_path, group, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    worst = 0.0
    with h5py.File(a_path, "r") as fa, h5py.File(b_path, "r") as fb:
        names = []
        if isinstance(fa[group], h5py.Dataset):  # one dataset: compare it alone
            group, names = group.rsplit("/", 1)[0] or "/", [group.rsplit("/", 1)[1]]
        else:
            fa[group].visititems(
                lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        if not names:
            print(f"h5_relnorm.py: no datasets under {group} in {a_path}")
            return 1
        for n in names:
            a = np.asarray(fa[group][n], dtype=float).ravel()
            b = np.asarray(fb[group][n], dtype=float).ravel()
            if a.shape != b.shape:
                print(f"{group}/{n}: shapes differ {a.shape} vs {b.shape}")
                return 1
            na = np.linalg.norm(a)
            r = np.linalg.norm(a - b) / (na if na > 0 else 1.0)
            worst = max(worst, r) if np.isfinite(r) else float("inf")
            print(f"{group}/{n}: relative difference {r:.3e}")
    print(f"largest relative difference {worst:.3e} (tolerance {tol:.1e})")
    return 0 if worst <= tol else 1


sys.exit(main())
