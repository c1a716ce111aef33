#!/usr/bin/python3
"""Turn a Rewind result file (HDF5) into PNG plots.

    python3 tools/rewind_plot.py result.h5 [-o OUTDIR] [--fields PATTERN ...]
                                 [--snapshot N|last|all|none]

Plots, one PNG each (named after the dataset path, '/' -> '_'):
  * grid fields (datasets with origin_xyz/spacing_xyz attributes): 2-D as an image with a
    colour bar, 3-D as the mid-plane z slice; gradient fields (under /gradient or named
    dJd...) with a symmetric diverging colour map when they change sign;
  * snapshots (/snapshots/NNNNNN/<comp>): the last one by default, see --snapshot;
  * time series (a 2-D dataset X with a companion X_t of times, e.g. /trajectory/y or
    receiver traces): lines against time (an image for many columns);
  * 1-D gradients (e.g. /gradient/dJdp, with its "names" attribute, /gradient/dJdy0): bars.
Titles carry the app name (root attribute "app"), the dataset and the time. Prints the files
it wrote. Exit status: 0 on success, 1 on an error (missing file, not a Rewind result, no
field matching --fields), 77 when numpy, h5py or matplotlib is missing (Debian:
python3-numpy python3-h5py python3-matplotlib; run Debian's /usr/bin/python3).
"""

import argparse
import fnmatch
import os
import sys

try:
    import numpy as np
    import h5py
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as exc:  # pragma: no cover - depends on the machine
    sys.stderr.write(
        "rewind_plot: missing Python module (%s): install python3-numpy python3-h5py "
        "python3-matplotlib (Debian) and run them with /usr/bin/python3\n" % exc
    )
    sys.exit(77)


class PlotError(Exception):
    """An error reported to the user as one line, exit status 1."""


def _attr_str(obj, name, default=""):
    v = obj.attrs.get(name, default)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v[()]
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return str(v)


def _skip(file, path, why):
    """One line on stderr for a dataset left out; the run goes on."""
    sys.stderr.write("rewind_plot: %s: %s: skipped: %s\n" % (file, path, why))


def _is_gradient(path):
    parts = path.strip("/").split("/")
    return parts[0] == "gradient" or any(p.startswith("dJd") for p in parts)


def _matches(path, patterns):
    if not patterns:
        return True
    name = path.strip("/")
    for pat in patterns:
        pat = pat.strip("/")
        if fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(name, pat + "/*"):
            return True
        if any(fnmatch.fnmatch(part, pat) for part in name.split("/")):
            return True
    return False


def _png_name(outdir, path):
    return os.path.join(outdir, path.strip("/").replace("/", "_") + ".png")


def _title(app, path):
    return "%s: %s" % (app, path.strip("/")) if app else path.strip("/")


def scan(h5):
    """Sorts the file's datasets into grid fields, snapshots, series and 1-D gradients; the
    rest, less the series' time companions X_t, is returned as unknown."""
    grids, snaps, series, grads, unknown = [], {}, [], [], []
    names = set()

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            names.add("/" + name)

    h5.visititems(visit)
    for path in sorted(names):
        d = h5[path]
        parts = path.strip("/").split("/")
        if "origin_xyz" in d.attrs and "spacing_xyz" in d.attrs and d.ndim in (2, 3):
            if parts[0] == "snapshots" and len(parts) == 3 and parts[1].isdigit():
                snaps.setdefault(int(parts[1]), []).append(path)
            else:
                grids.append(path)
        elif d.ndim == 2 and path + "_t" in names:
            series.append(path)
        elif d.ndim == 1 and _is_gradient(path) and not path.endswith("_t"):
            grads.append(path)
        elif not (path.endswith("_t") and path[:-2] in names):
            unknown.append(path)
    return grids, snaps, series, grads, unknown


def plot_grid(h5, path, app, outdir, time=None):
    d = h5[path]
    data = np.asarray(d[()], dtype=float)
    lo = np.asarray(d.attrs["origin_xyz"], dtype=float)
    h = np.asarray(d.attrs["spacing_xyz"], dtype=float)
    where = ""
    if data.ndim == 3:  # [z][y][x]: the mid-plane slice
        k = data.shape[0] // 2
        where = ", z = %.4g (mid-plane)" % (lo[2] + k * h[2])
        data = data[k]
    ny, nx = data.shape
    extent = [lo[0], lo[0] + (nx - 1) * h[0], lo[1], lo[1] + (ny - 1) * h[1]]
    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    lo_v, hi_v = (float(np.nanmin(data)), float(np.nanmax(data))) if data.size else (0.0, 0.0)
    if _is_gradient(path) and lo_v < 0.0 < hi_v:  # signed: symmetric diverging map
        m = max(-lo_v, hi_v)
        im = ax.imshow(data, origin="lower", extent=extent, cmap="RdBu_r", vmin=-m, vmax=m,
                       aspect="equal", interpolation="nearest")
    else:
        im = ax.imshow(data, origin="lower", extent=extent, cmap="viridis", aspect="equal",
                       interpolation="nearest")
    fig.colorbar(im, ax=ax)
    title = _title(app, path)
    if time is not None:
        title += "  (t = %.6g)" % time
    ax.set_title(title + where, fontsize=10)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    out = _png_name(outdir, path)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out


def plot_series(h5, path, app, outdir):
    y = np.asarray(h5[path][()], dtype=float)
    t = np.asarray(h5[path + "_t"][()], dtype=float)
    fig, ax = plt.subplots(figsize=(7.0, 4.5))
    if y.shape[1] <= 16:
        for c in range(y.shape[1]):
            ax.plot(t, y[:, c], label="%s[%d]" % (path.rsplit("/", 1)[-1], c))
        if y.shape[1] <= 8:
            ax.legend(fontsize=8)
        ax.set_xlabel("t")
    else:  # many columns (receiver traces): time down, column across
        ext = [-0.5, y.shape[1] - 0.5, t[-1] if t.size else 1, t[0] if t.size else 0]
        m = float(np.nanmax(np.abs(y))) or 1.0
        im = ax.imshow(y, aspect="auto", extent=ext, cmap="RdBu_r", vmin=-m, vmax=m,
                       interpolation="nearest")
        fig.colorbar(im, ax=ax)
        ax.set_xlabel("column (receiver)")
        ax.set_ylabel("t")
    ax.set_title(_title(app, path), fontsize=10)
    out = _png_name(outdir, path)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out


def plot_vector(h5, path, app, outdir):
    d = h5[path]
    v = np.asarray(d[()], dtype=float)
    labels = [s for s in _attr_str(d, "names").split(",") if s]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    if v.size <= 64:
        ax.bar(np.arange(v.size), v, color=["tab:red" if x < 0 else "tab:blue" for x in v])
        if len(labels) == v.size:
            ax.set_xticks(np.arange(v.size))
            ax.set_xticklabels(["dJ/d" + s for s in labels], rotation=30, fontsize=8)
        else:
            ax.set_xlabel("index")
    else:
        ax.plot(v)
        ax.set_xlabel("index")
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_title(_title(app, path), fontsize=10)
    out = _png_name(outdir, path)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="PNG plots of a Rewind result file.")
    ap.add_argument("file", help="result file (.h5) written by a Rewind app")
    ap.add_argument("-o", "--outdir", default=None,
                    help="folder for the PNGs (default: <file without .h5>_plots)")
    ap.add_argument("--fields", nargs="+", default=None, metavar="PATTERN",
                    help="only these datasets (HDF5 paths or names, shell patterns: "
                         "'state/*', 'dJd*', 'u')")
    ap.add_argument("--snapshot", default="last",
                    help="which snapshots to plot: an index N, 'last' (default), 'all', 'none'")
    args = ap.parse_args(argv)

    try:
        if not os.path.exists(args.file):
            raise PlotError("%s: no such file" % args.file)
        if not h5py.is_hdf5(args.file):
            raise PlotError("%s: not an HDF5 file (expected a Rewind result .h5)" % args.file)
        with h5py.File(args.file, "r") as h5:
            grids, snaps, series, grads, unknown = scan(h5)
            app = _attr_str(h5, "app")
            if not app and not grids and not snaps:
                raise PlotError("%s: not a Rewind result (no 'app' attribute, no grid fields)"
                                % args.file)
            sel = args.snapshot.strip().lower()
            keys = sorted(snaps)
            if sel == "none" or not keys:
                chosen = []
            elif sel == "all":
                chosen = keys
            elif sel == "last":
                chosen = keys[-1:]
            else:
                try:
                    n = int(sel)
                except ValueError:
                    raise PlotError("--snapshot %s: expected an index, last, all or none"
                                    % args.snapshot) from None
                if n < 0:
                    n += len(keys)
                if n not in snaps:
                    raise PlotError("--snapshot %s: the file has snapshots %d..%d"
                                    % (args.snapshot, keys[0], keys[-1]))
                chosen = [n]
            jobs = []
            for k in chosen:
                grp = h5["/snapshots/%06d" % k]
                t = float(grp.attrs["time"]) if "time" in grp.attrs else None
                jobs += [(plot_grid, p, {"time": t}) for p in snaps[k]]
            jobs += [(plot_grid, p, {}) for p in grids]
            jobs += [(plot_series, p, {}) for p in series]
            jobs += [(plot_vector, p, {}) for p in grads]
            jobs = [j for j in jobs if _matches(j[1], args.fields)]
            if not jobs:
                avail = [p for p in grids + series + grads] + \
                    [p for k in keys for p in snaps[k]]
                if args.fields:
                    raise PlotError("no dataset matches --fields %s; the file has: %s"
                                    % (" ".join(args.fields), ", ".join(avail) or "nothing"))
                raise PlotError("%s: nothing to plot (no grid fields, series or gradients)"
                                % args.file)
            outdir = args.outdir
            if outdir is None:
                base = args.file[:-3] if args.file.endswith(".h5") else args.file
                outdir = base + "_plots"
            for path in unknown:
                if _matches(path, args.fields):
                    _skip(args.file, path, "no plot for this layout (not a grid field, series "
                          "or 1-D gradient)")
            os.makedirs(outdir, exist_ok=True)
            written = 0
            for fn, path, kw in jobs:
                try:
                    print(fn(h5, path, app, outdir, **kw))
                    written += 1
                except (PlotError, OSError, LookupError, TypeError, ValueError) as exc:
                    plt.close("all")
                    _skip(args.file, path, exc)
            if not written:
                raise PlotError("%s: nothing could be plotted (see the messages above)"
                                % args.file)
    except PlotError as exc:
        sys.stderr.write("rewind_plot: error: %s\n" % exc)
        return 1
    except (OSError, KeyError, ValueError) as exc:
        sys.stderr.write("rewind_plot: error: %s: %s\n" % (args.file, exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
