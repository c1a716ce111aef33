#!/usr/bin/python3
"""Plot a rewind-neuralode training result (HDF5) as PNGs.

    python3 tools/rewind_neuralode_plot.py train.h5 [-o OUTDIR]

Reads what `rewind-neuralode -mode train` writes: /train/loss (the mean loss per epoch,
attributes seconds and batches_per_epoch), /trajectory/true and /trajectory/model (rows x 2,
times in /trajectory/true_t and /trajectory/model_t: the true trajectory of the data set and
the learned model's, both from the data's start), /model/widths, the root attributes "app",
"loss" and "deck". Writes into OUTDIR (default: <file without .h5>_plots):
  * train_loss.png: the loss per epoch on a log scale;
  * trajectory_phase.png: the learned and the true trajectory in the phase plane (x, y);
  * trajectory_components.png: both trajectories' components against time.
Prints the files it wrote. Exit status: 0 on success; 1 on an error (missing file, not an
HDF5 file, not a rewind-neuralode training result: a gradient-mode result has no training
history); 77 when numpy, h5py or matplotlib is missing (Debian: python3-numpy python3-h5py
python3-matplotlib; run Debian's /usr/bin/python3).
"""

import argparse
import os
import re
import sys

try:
    import numpy as np
    import h5py
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
except ImportError as exc:  # pragma: no cover - depends on the machine
    sys.stderr.write(
        "rewind_neuralode_plot: missing Python module (%s): install python3-numpy python3-h5py "
        "python3-matplotlib (Debian) and run them with /usr/bin/python3\n" % exc
    )
    sys.exit(77)

PROG = "rewind_neuralode_plot"


class PlotError(Exception):
    """An error reported to the user as one line, exit status 1."""


def _attr_str(obj, name, default=""):
    v = obj.attrs.get(name, default)
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v[()]
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def _attr_float(obj, name):
    v = obj.attrs.get(name)
    try:
        return float(np.asarray(v).reshape(-1)[0]) if v is not None else None
    except (TypeError, ValueError, IndexError):
        return None


def _deck_value(deck, key):
    """A top-level `key: value` of the effective deck (root attribute "deck"), or ''."""
    m = re.search(r"^%s:\s*(\S+)" % re.escape(key), deck, re.M)
    return m.group(1) if m else ""


def _describe(h5):
    """One line for the titles: app, data set, architecture."""
    app = _attr_str(h5, "app") or "rewind-neuralode"
    deck = _attr_str(h5, "deck")
    parts = [app]
    data = _deck_value(deck, "data")
    if data:
        parts.append({"lotkavolterra": "Lotka-Volterra"}.get(data, data))
    if "/model/widths" in h5:
        w = np.asarray(h5["/model/widths"][()], dtype=float).astype(int)
        act = _attr_str(h5["/model/theta"], "activation") if "/model/theta" in h5 else ""
        parts.append("MLP " + "-".join(str(x) for x in w) + ((" " + act) if act else ""))
    return ", ".join(parts)


def _series(h5, path):
    """(t, y) of a 2-column series with its companion times, or None when absent."""
    if path not in h5 or path + "_t" not in h5:
        return None
    y = np.asarray(h5[path][()], dtype=float)
    t = np.asarray(h5[path + "_t"][()], dtype=float).reshape(-1)
    if y.ndim != 2 or y.shape[1] < 2 or y.shape[0] != t.size:
        raise PlotError("%s has shape %s with %d times; expected rows x 2 with one time per row"
                        % (path, y.shape, t.size))
    return t, y


def plot_loss(h5, title, outdir):
    d = h5["/train/loss"]
    loss = np.asarray(d[()], dtype=float).reshape(-1)
    epochs = np.arange(1, loss.size + 1)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    good = np.isfinite(loss) & (loss > 0)  # a log scale shows positive values only
    ax.semilogy(epochs[good], loss[good], marker="o" if loss.size <= 30 else None, ms=3)
    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_ylabel("mean loss (MSE at T)")
    ax.grid(True, which="both", lw=0.3)
    sub = "%d epochs" % loss.size
    sec = _attr_float(d, "seconds")
    if sec is not None:
        sub += " in %.1f s" % sec
    if good.any() and loss[good][-1] > 0:
        sub += ", %.3g -> %.3g (%.1fx lower)" % (loss[good][0], loss[good][-1],
                                                 loss[good][0] / loss[good][-1])
    ax.set_title("%s\nloss per epoch: %s" % (title, sub), fontsize=9)
    out = os.path.join(outdir, "train_loss.png")
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out


def plot_phase(true, model, title, outdir):
    fig, ax = plt.subplots(figsize=(5.6, 5.2))
    for (t, y), lab, sty in ((true, "true", "-"), (model, "learned", "--")):
        ax.plot(y[:, 0], y[:, 1], sty, lw=1.5, label=lab)
    ax.plot(true[1][0, 0], true[1][0, 1], "ko", ms=4, label="start")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(fontsize=8)
    ax.set_title("%s\nphase plane, t in [%.3g, %.3g]" % (title, true[0][0], true[0][-1]),
                 fontsize=9)
    out = os.path.join(outdir, "trajectory_phase.png")
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out


def plot_components(true, model, title, outdir):
    fig, ax = plt.subplots(figsize=(7.0, 4.5))
    for c, (name, col) in enumerate((("x", "tab:blue"), ("y", "tab:orange"))):
        ax.plot(true[0], true[1][:, c], "-", color=col, lw=1.5, label="%s true" % name)
        ax.plot(model[0], model[1][:, c], "--", color=col, lw=1.5, label="%s learned" % name)
    ax.set_xlabel("t")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(True, lw=0.3)
    ax.set_title("%s\ncomponents against time" % title, fontsize=9)
    out = os.path.join(outdir, "trajectory_components.png")
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="PNG plots of a rewind-neuralode training result: loss per epoch, learned "
                    "vs true trajectory.")
    ap.add_argument("file", help="result file (.h5) of rewind-neuralode -mode train")
    ap.add_argument("-o", "--outdir", default=None,
                    help="folder for the PNGs (default: <file without .h5>_plots)")
    args = ap.parse_args(argv)

    try:
        if not os.path.exists(args.file):
            raise PlotError("%s: no such file" % args.file)
        if not h5py.is_hdf5(args.file):
            raise PlotError("%s: not an HDF5 file (expected a rewind-neuralode result .h5)"
                            % args.file)
        with h5py.File(args.file, "r") as h5:
            app = _attr_str(h5, "app")
            if app and app != "rewind-neuralode":
                raise PlotError("%s: a result of %s, not of rewind-neuralode (use "
                                "tools/rewind_plot.py)" % (args.file, app))
            has_loss = "/train/loss" in h5
            true = _series(h5, "/trajectory/true")
            model = _series(h5, "/trajectory/model")
            if not has_loss and (true is None or model is None):
                what = "a gradient-mode result" if "/gradient/dJdtheta" in h5 else \
                    "not a rewind-neuralode result"
                raise PlotError("%s: %s: no /train/loss or /trajectory/{true,model}; plot the "
                                "output of rewind-neuralode -mode train" % (args.file, what))
            title = _describe(h5)
            outdir = args.outdir
            if outdir is None:
                base = args.file[:-3] if args.file.endswith(".h5") else args.file
                outdir = base + "_plots"
            os.makedirs(outdir, exist_ok=True)
            written = []
            if has_loss:
                written.append(plot_loss(h5, title, outdir))
            else:  # epochs: 0 writes no history
                sys.stderr.write("%s: %s has no /train/loss (0 epochs?): no loss plot\n"
                                 % (PROG, args.file))
            if true is not None and model is not None:
                written.append(plot_phase(true, model, title, outdir))
                written.append(plot_components(true, model, title, outdir))
            else:
                sys.stderr.write("%s: %s has no /trajectory/true and /trajectory/model: no "
                                 "trajectory plots\n" % (PROG, args.file))
            for out in written:
                print(out)
    except PlotError as exc:
        sys.stderr.write("%s: error: %s\n" % (PROG, exc))
        return 1
    except (OSError, KeyError, ValueError) as exc:
        sys.stderr.write("%s: error: %s: %s\n" % (PROG, args.file, exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
