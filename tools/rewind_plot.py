#!/usr/bin/python3
"""Turn a Rewind result file (HDF5) into PNG plots.

    python3 tools/rewind_plot.py result.h5 [-o OUTDIR] [--fields PATTERN ...]
                                 [--snapshot N|last|all|none]

Plots, one PNG each (named after the dataset path, '/' -> '_'):
  * grid fields (datasets with origin_xyz/spacing_xyz attributes): 2-D as an image with a
    colour bar, 3-D as the mid-plane z slice; gradient fields (under /gradient or named
    dJd...) with a symmetric diverging colour map when they change sign;
  * snapshots (/snapshots/NNNNNN/<comp>): the last one by default, see --snapshot;
  * time series (a 2-D dataset X with a companion X_t of times, e.g. /trajectory/y): lines
    against time with a legend, an image (time x column) past 16 columns;
  * flat records, 1-D datasets whose shape is in attributes (see RECORDS): rewind-wave's
    receiver traces /data/traces (receivers, samples, dt, t0; positions from the sibling
    /data/receivers, the nodes recorded at, or in older files from the deck) and
    rewind-heat's sensor data /sensors/data (rows_times, columns_sensors, with
    /sensors/times and /sensors/coords): plotted like time series, one legend entry per
    receiver or sensor with its position;
  * 1-D gradients (e.g. /gradient/dJdp, with its "names" attribute, /gradient/dJdy0): bars.
Titles carry the app name (root attribute "app"), the dataset and the time. Prints the files
it wrote. A dataset of no known layout, or one that cannot be plotted (malformed attributes,
a missing companion), is skipped with a line on stderr naming the file and the dataset.
Exit status: 0 when at least one PNG was written, 1 on an error (missing file, not HDF5, not
a Rewind result, no field matching --fields, nothing could be plotted), 77 when numpy, h5py
or matplotlib is missing (Debian: python3-numpy python3-h5py python3-matplotlib; run
Debian's /usr/bin/python3).
"""

import argparse
import collections
import fnmatch
import os
import re
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


def _save(fig, out):
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out


def _changes_sign(data):
    return bool(data.size) and float(np.nanmin(data)) < 0.0 < float(np.nanmax(data))


def _colours(data, diverging):
    """imshow's colour keywords: a diverging map centred on 0, or viridis."""
    if diverging:
        m = float(np.nanmax(np.abs(data))) if data.size else 0.0
        return {"cmap": "RdBu_r", "vmin": -(m or 1.0), "vmax": m or 1.0}
    return {"cmap": "viridis"}


def _count(d, name):
    """The positive integer attribute `name` of dataset d."""
    v = d.attrs.get(name)
    ok = v is not None and np.ndim(v) == 0 and np.issubdtype(np.asarray(v).dtype, np.integer)
    if not ok or v < 1:
        raise PlotError("attribute '%s' is %s, not a positive count"
                        % (name, "missing" if v is None else v))
    return int(v)


def _deck_points(deck, key, count):
    """The `count` points (x, y) of the list `key: [x1, y1, x2, ...]` in the deck stored in the
    file (root attribute "deck"), or None when the deck has no such list of that length."""
    m = re.search(r"^%s:\s*\[([^\]]*)\]" % re.escape(key), deck, re.M)
    try:
        v = [float(x) for x in m.group(1).split(",")] if m else []
    except ValueError:
        return None
    return list(zip(v[0::2], v[1::2])) if len(v) == 2 * count else None


def _receiver_traces(h5, path):
    """rewind-wave's /data/traces: [receiver][sample] with the attributes receivers, samples,
    dt and t0 (sample n at t0 + n dt). The receiver positions are the nodes the traces were
    recorded at, the sibling dataset `receivers` (x, y per receiver); files written before
    the app stored them give the deck's list `receivers` instead (positions before the app
    moved each receiver to its nearest node)."""
    d = h5[path]
    nr, ns = _count(d, "receivers"), _count(d, "samples")
    if d.size != nr * ns:
        raise PlotError("%d values, not receivers x samples = %d x %d" % (d.size, nr, ns))
    dt = float(d.attrs.get("dt", 0.0))
    if not dt > 0.0:
        raise PlotError("attribute 'dt' (the sample interval) is missing or not positive")
    t = float(d.attrs.get("t0", 0.0)) + dt * np.arange(ns)
    y = np.asarray(d[()], dtype=float).reshape(nr, ns).T
    group = path.rsplit("/", 1)[0]
    if group + "/receivers" in h5 and h5[group + "/receivers"].size == 2 * nr:
        xy = np.asarray(h5[group + "/receivers"][()], dtype=float).reshape(nr, 2)
        points = [tuple(p) for p in xy]
    else:
        points = _deck_points(_attr_str(h5, "deck"), "receivers", nr)
    return t, y, points, "%d receivers, dt = %g" % (nr, dt)


def _sensor_data(h5, path):
    """rewind-heat's /sensors/data: [time][sensor] with the attributes rows_times and
    columns_sensors; the times in the sibling dataset `times`, the sensors' nodes (x, y, z)
    in the sibling `coords` (z = 0 throughout on a 2-D grid: then (x, y) only)."""
    d = h5[path]
    nt, ns = _count(d, "rows_times"), _count(d, "columns_sensors")
    if d.size != nt * ns:
        raise PlotError("%d values, not rows_times x columns_sensors = %d x %d"
                        % (d.size, nt, ns))
    group = path.rsplit("/", 1)[0]
    if group + "/times" not in h5:
        raise PlotError("no dataset %s/times for its %d rows" % (group, nt))
    t = np.asarray(h5[group + "/times"][()], dtype=float)
    y = np.asarray(d[()], dtype=float).reshape(nt, ns)
    points = None
    if group + "/coords" in h5 and h5[group + "/coords"].size == 3 * ns:
        xyz = np.asarray(h5[group + "/coords"][()], dtype=float).reshape(ns, 3)
        points = xyz if xyz[:, 2].any() else xyz[:, :2]
    return t, y, points, "%d sensors" % ns


# Flat records: 1-D datasets whose shape is in attributes. `attrs` identify the layout;
# `reader(h5, path)` returns the times, the values [time][trace], the positions (or None) and a
# summary for the title; it uses the sibling datasets `siblings`; a trace is a `what`; the
# traces oscillate about 0 when `diverging` (their image gets a diverging colour map).
Record = collections.namedtuple("Record", "attrs reader siblings what diverging")
RECORDS = (
    Record(("receivers", "samples"), _receiver_traces, ("receivers",), "receiver", True),
    Record(("rows_times", "columns_sensors"), _sensor_data, ("times", "coords"), "sensor",
           False),
)


def _record(d):
    """The Record of dataset d, or None."""
    if d.ndim == 1:
        for rec in RECORDS:
            if all(a in d.attrs for a in rec.attrs):
                return rec
    return None


def scan(h5):
    """Sorts the file's datasets into grid fields, snapshots, series, flat records and 1-D
    gradients; the rest, less the series' time companions X_t and the records' siblings, is
    returned as unknown."""
    grids, snaps, series, records, grads, rest = [], {}, [], [], [], []
    names, used = set(), set()

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            names.add("/" + name)

    h5.visititems(visit)
    for path in sorted(names):
        d = h5[path]
        parts = path.strip("/").split("/")
        rec = _record(d)
        if "origin_xyz" in d.attrs and "spacing_xyz" in d.attrs and d.ndim in (2, 3):
            if parts[0] == "snapshots" and len(parts) == 3 and parts[1].isdigit():
                snaps.setdefault(int(parts[1]), []).append(path)
            else:
                grids.append(path)
        elif d.ndim == 2 and path + "_t" in names:
            series.append(path)
            used.add(path + "_t")
        elif rec:
            records.append(path)
            used.update(path.rsplit("/", 1)[0] + "/" + s for s in rec.siblings)
        elif d.ndim == 1 and _is_gradient(path) and not path.endswith("_t"):
            grads.append(path)
        else:
            rest.append(path)
    return grids, snaps, series, records, grads, [p for p in rest if p not in used]


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
    im = ax.imshow(data, origin="lower", extent=extent, aspect="equal", interpolation="nearest",
                   **_colours(data, _is_gradient(path) and _changes_sign(data)))
    fig.colorbar(im, ax=ax)
    title = _title(app, path)
    if time is not None:
        title += "  (t = %.6g)" % time
    ax.set_title(title + where, fontsize=10)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    return _save(fig, _png_name(outdir, path))


def _plot_traces(t, y, labels, column, quantity, diverging, title, out):
    """Columns of y [time][column] against t: lines with a legend up to 16 columns (dashed
    past the 10 colours), an image (time down, column across) past that."""
    if t.shape != (y.shape[0],):
        raise PlotError("%d times for %d samples" % (t.size, y.shape[0]))
    fig, ax = plt.subplots(figsize=(7.0, 4.5))
    if y.shape[1] <= 16:
        for c in range(y.shape[1]):
            ax.plot(t, y[:, c], lw=1.0, ls="-" if c < 10 else "--", label=labels[c])
        ax.legend(fontsize=7, ncol=1 if y.shape[1] <= 8 else 2, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0))
        ax.set_xlabel("t")
        ax.set_ylabel(quantity)
    else:
        ext = [-0.5, y.shape[1] - 0.5, t[-1] if t.size else 1, t[0] if t.size else 0]
        im = ax.imshow(y, aspect="auto", extent=ext, interpolation="nearest",
                       **_colours(y, diverging))
        fig.colorbar(im, ax=ax, label=quantity)
        ax.set_xlabel(column + " (index)")
        ax.set_ylabel("t")
    ax.set_title(title, fontsize=10)
    return _save(fig, out)


def plot_series(h5, path, app, outdir):
    y = np.asarray(h5[path][()], dtype=float)
    t = np.asarray(h5[path + "_t"][()], dtype=float)
    name = path.rsplit("/", 1)[-1]
    labels = ["%s[%d]" % (name, c) for c in range(y.shape[1])]
    return _plot_traces(t, y, labels, "column", name, _changes_sign(y), _title(app, path),
                        _png_name(outdir, path))


def plot_record(h5, path, app, outdir):
    rec = _record(h5[path])
    t, y, points, summary = rec.reader(h5, path)
    labels = ["%s %d" % (rec.what, k + 1) for k in range(y.shape[1])]  # as the apps count
    if points is not None:
        labels = ["%s at (%s)" % (s, ", ".join("%.3g" % x for x in p))
                  for s, p in zip(labels, points)]
    return _plot_traces(t, y, labels, rec.what, "u at the " + rec.what, rec.diverging,
                        "%s (%s)" % (_title(app, path), summary), _png_name(outdir, path))


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
    return _save(fig, _png_name(outdir, path))


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
            grids, snaps, series, records, grads, unknown = scan(h5)
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
            jobs += [(plot_record, p, {}) for p in records]
            jobs += [(plot_vector, p, {}) for p in grads]
            jobs = [j for j in jobs if _matches(j[1], args.fields)]
            if not jobs:
                avail = grids + series + records + grads + \
                    [p for k in keys for p in snaps[k]]
                if args.fields:
                    raise PlotError("no dataset matches --fields %s; the file has: %s"
                                    % (" ".join(args.fields), ", ".join(avail) or "nothing"))
                raise PlotError("%s: nothing to plot (no grid fields, series, records or "
                                "gradients)" % args.file)
            outdir = args.outdir
            if outdir is None:
                base = args.file[:-3] if args.file.endswith(".h5") else args.file
                outdir = base + "_plots"
            for path in unknown:
                if _matches(path, args.fields):
                    _skip(args.file, path, "no plot for this layout (not a grid field, series, "
                          "receiver or sensor record, or 1-D gradient)")
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
