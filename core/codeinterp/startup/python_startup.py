# The code interpreter's IPython start-up: run once in every python kernel
# (a silent cell, before the first user cell), as E2B's template does with its
# IPython profile. It configures IPython as E2B does and adds what E2B's
# start-up scripts add:
#   * "e2b/chart": a matplotlib Figure's data (type, title, axes, elements),
#     next to its png — the shape of E2B's Chart types (docs/code-interpreter.md,
#     "Charts");
#   * "e2b/data": a pandas DataFrame's columns, next to its html/text;
#   * "application/json" for lists and dicts;
#   * PIL images shown by Image.show() or saved to a file name are displayed.
# Nothing is imported ahead of use: each hook waits for the user's own import
# of pandas, matplotlib or PIL. Written for this project (E2B's template was
# read for the output shape; no code is taken from it).
# SPDX-License-Identifier: Apache-2.0


def _asb_streams():
    """stdout and stderr of a python kernel (ipykernel 6.17's OutStream):
      * Output written to file descriptors 1 and 2 (a subprocess's, C
        code's) goes through a pipe that ipykernel's watcher thread reads
        into the stream, with nothing making sure it has arrived when the
        cell ends: 2-10% of `subprocess.run(["echo", "hi"])` cells lost
        their line on this 2-core VM under load (it came after the idle
        status). Our watcher replaces ipykernel's and counts the bytes it
        has passed to the stream; a flush first waits (up to 10 s) until
        what was in the pipe when it was called has been passed on, so
        ipykernel's flush before its reply takes it along.
      * A flush with nothing written, nothing in the pipe and nothing on
        its way returns at once (ipykernel hands its iopub thread two
        callbacks per flush and waits for the second: six times a cell);
        otherwise it is ipykernel's, with one callback instead of two.
    Places output goes through are looked at in the order it flows (the
    pipe, the watcher, the buffer, a _flush taking it): data written
    before the flush is seen at one of them, or is already queued on the
    iopub thread, ahead of anything sent after the flush."""
    import codecs
    import fcntl
    import os
    import select
    import sys
    import termios
    import threading

    try:
        from ipykernel import iostream
    except ImportError:
        return
    cls = getattr(iostream, "OutStream", None)
    needed = ("pub_thread", "_flush", "flush_timeout", "_buffer", "_buffer_lock",
              "_flush_pending", "_master_pid", "echo")
    if (cls is None or not isinstance(sys.stdout, cls) or getattr(cls, "_asb_streams", False) or
            not all(hasattr(sys.stdout, a) for a in needed)):
        return
    cls._asb_streams = True

    def watch(stream, fno):
        r, w = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(r, False)
        os.dup2(w, fno)  # fd 1 (2) now writes to our pipe; ipykernel's stays idle
        os.close(w)
        state = {"cv": threading.Condition(), "passed": 0, "fd": r}
        decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        echo = getattr(stream, "_original_stdstream_copy", None)

        def run():
            poller = select.poll()
            poller.register(r, select.POLLIN)
            while getattr(stream, "_should_watch", True):
                if not poller.poll(1000):
                    continue
                with state["cv"]:
                    try:
                        data = os.read(r, 65536)
                    except BlockingIOError:
                        continue
                    if not data:
                        return
                    try:
                        text = decode(data)
                        if text:
                            stream.write(text)
                    except Exception:  # a closed stream: the kernel is ending
                        pass
                    finally:
                        state["passed"] += len(data)
                        state["cv"].notify_all()
                if echo is not None:  # as ipykernel's watcher: to the original fd too
                    try:
                        os.write(echo, data)
                    except OSError:
                        pass

        thread = threading.Thread(target=run, name="asb-fd-watch", daemon=True)
        stream._asb_fd = state
        stream.watch_fd_thread = thread  # what OutStream.close joins
        stream._fid = r
        thread.start()

    for name in ("stdout", "stderr"):
        stream, orig = getattr(sys, name, None), getattr(sys, "__%s__" % name, None)
        if (isinstance(stream, cls) and getattr(stream, "_should_watch", False) and
                hasattr(stream, "_original_stdstream_copy") and orig is not None):
            try:
                watch(stream, orig.fileno())
            except (OSError, ValueError):
                pass

    def drain(self):
        state = getattr(self, "_asb_fd", None)
        if state is None:
            return
        with state["cv"]:
            try:
                n = fcntl.ioctl(state["fd"], termios.FIONREAD, b"\0\0\0\0")
                n = int.from_bytes(n, sys.byteorder)
            except OSError:
                return
            if n:
                target = state["passed"] + n
                state["cv"].wait_for(lambda: state["passed"] >= target, 10.0)

    stock_send = cls._flush

    def _flush(self):
        # in the iopub thread (or a forked child): counted while the data
        # it took from the buffer is not yet queued for sending
        with self._buffer_lock:
            self._asb_sending = getattr(self, "_asb_sending", 0) + 1
        try:
            stock_send(self)
        finally:
            with self._buffer_lock:
                self._asb_sending -= 1

    def flush(self):
        pt = self.pub_thread
        if not (pt and pt.thread is not None and pt.thread.is_alive() and
                pt.thread.ident != threading.current_thread().ident):
            self._flush()
            return
        if os.getpid() == self._master_pid:
            drain(self)
            if self.echo is None:
                with self._buffer_lock:
                    empty = self._buffer.tell() == 0
                if empty and not getattr(self, "_asb_sending", 0) and not self._flush_pending:
                    return
        done = threading.Event()

        def flush_then_set():
            try:
                self._flush()
            finally:
                done.set()

        pt.schedule(flush_then_set)
        if not done.wait(self.flush_timeout):
            print("IOStream.flush timed out", file=sys.__stderr__)

    flush.__doc__ = cls.flush.__doc__
    cls._flush = _flush
    cls.flush = flush


def _asb_quick_io(ip):
    """What ipykernel and IPython spend on every request that the server
    does not need (of a warm `1+1`'s ~3.5 ms, without the cell itself):
      * the kernel's 0.5 ms sleep before every execute_reply ("to allow
        output to flush"): the server ends a cell on the idle status, which
        iopub (one ordered stream) delivers after all of the cell's output,
        never on the reply;
      * the busy status published for every request (one more iopub
        message, serialised, signed and handed to the iopub thread), which
        the server does not read;
      * the `decorator` package's wrapper around every display formatter's
        __call__ (catch_format_error): it binds the arguments to the
        signature with inspect on each call, ~15 us, for each of the 14
        formatters a result goes through; the same handling (errors shown,
        NotImplementedError quiet, _check_return) without the binding;
      * dateutil parsing each incoming message's header date (~80 us):
        datetime.fromisoformat for the ISO 8601 dates with a zone that
        jupyter_client's pattern accepts, dateutil for anything else;
      * waits on the iopub thread for flushes with nothing to flush, and
        two callbacks per flush where one does (_asb_streams, installed
        with it, which also makes a subprocess's output arrive before the
        cell ends);
      * four debug log records a request, built (a stack walk each) for
        handlers that drop them.
    Written against ipykernel 6.17, IPython 8.5, jupyter_client 7.4 (Debian 12):
    where their internals differ, that part is left alone."""
    import datetime
    import inspect
    import sys

    kernel = getattr(ip, "kernel", None)
    if kernel is None or getattr(kernel, "_asb_quick", False):
        return
    kernel._asb_quick = True
    if isinstance(getattr(kernel, "_execute_sleep", None), float):
        kernel._execute_sleep = 0.0
    stock_status = getattr(kernel, "_publish_status", None)
    if stock_status is not None:
        def publish_status(status, *args, **kwargs):
            if status != "busy":
                stock_status(status, *args, **kwargs)

        kernel._publish_status = publish_status

    # The kernel's logger is at DEBUG (traitlets filters in its handlers),
    # so every request builds four debug records (a stack walk each) that
    # nothing prints: the logger starts at its handlers' lowest level.
    log = getattr(kernel, "log", None)
    levels = [h.level for h in getattr(log, "handlers", ())]
    if levels and min(levels) > log.level:
        log.setLevel(min(levels))

    from IPython.core import formatters

    def plain_call(method):
        def __call__(self, obj):
            try:
                r = method(self, obj)
            except NotImplementedError:
                return self._check_return(None, obj)
            except Exception:
                ip.showtraceback(sys.exc_info())
                return self._check_return(None, obj)
            return self._check_return(r, obj)

        __call__.__wrapped__ = method
        __call__.__doc__ = method.__doc__
        return __call__

    for cls in vars(formatters).values():
        if not (isinstance(cls, type) and issubclass(cls, formatters.BaseFormatter)):
            continue
        inner = getattr(cls.__dict__.get("__call__"), "__wrapped__", None)
        try:
            params = list(inspect.signature(inner).parameters) if inner else None
        except (TypeError, ValueError):
            params = None
        if params == ["self", "obj"]:
            cls.__call__ = plain_call(inner)

    try:
        from jupyter_client import jsonutil
    except ImportError:
        return
    stock_parse = getattr(jsonutil, "parse_date", None)
    pattern = getattr(jsonutil, "ISO8601_PAT", None)
    if stock_parse is None or pattern is None:
        return

    def parse_date(s):
        if isinstance(s, str) and pattern.match(s) and (s.endswith("Z") or "+" in s[19:] or
                                                         "-" in s[19:]):
            try:
                return datetime.datetime.fromisoformat(s)
            except ValueError:
                pass
        return stock_parse(s)

    jsonutil.parse_date = parse_date


def _asb_install(ip, quick_io, streams):
    import datetime
    import importlib.abc
    import importlib.util
    import json
    import math
    import os
    import re
    import sys

    from IPython.core.formatters import BaseFormatter, JSONFormatter
    from traitlets import ObjectName, Unicode

    # ---- IPython as E2B configures it ------------------------------------
    ip.run_line_magic("colors", "NoColor")
    ip.display_formatter.formatters["text/plain"].max_seq_length = 0

    # ---- ipykernel's per-request waits ---------------------------------
    # ASB_CODEI_STOCK_IO=1 keeps ipykernel's own behaviour (bench/codei_bench
    # runs both side by side).
    if os.environ.get("ASB_CODEI_STOCK_IO") != "1":
        streams()
        quick_io(ip)

    # ---- JSON-safe values -------------------------------------------------
    def plain(v):
        """v as JSON-serialisable Python data: numpy scalars and arrays,
        dates, NaN/inf (null), non-string keys (their str)."""
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, dict):
            return {k if isinstance(k, str) else str(k): plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        pd = sys.modules.get("pandas")
        if pd is not None and v is pd.NaT:
            return None
        if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
            return v.isoformat()
        np = sys.modules.get("numpy")
        if np is not None:
            if isinstance(v, np.ndarray):
                return plain(v.tolist())
            if isinstance(v, np.datetime64):
                return str(v.astype("datetime64[s]"))
            if isinstance(v, np.generic):
                return plain(v.item())
        raise TypeError(f"not JSON data: {type(v).__name__}")

    # ---- charts ------------------------------------------------------------
    def num(v):
        """A float without the floating point noise of transformed
        coordinates: 8 - exponent significant digits (324.0 from
        323.9999999, 84.75 from 84.75000001), E2B's rounding."""
        f = float(v)
        if not math.isfinite(f):
            return None
        if f == 0:
            return 0.0
        digits = max(1, 8 - math.floor(math.log10(abs(f))))
        return float(f"{f:.{digits}g}")

    def coord(v):
        """A point or tick value: a date as ISO text, a string as is, a
        number as a float."""
        if isinstance(v, str):
            return v
        if isinstance(v, (datetime.datetime, datetime.date)):
            return v.isoformat()
        np = sys.modules.get("numpy")
        if np is not None and isinstance(v, np.datetime64):
            return str(v.astype("datetime64[s]"))
        try:
            f = float(v)
        except (TypeError, ValueError):
            return str(v)
        return f if math.isfinite(f) else None

    unit_re = re.compile(r"\s\((.*?)\)|\[(.*?)\]")

    def unit_of(label):
        if not label:
            return None
        m = unit_re.search(label)
        return (m.group(1) or m.group(2)) if m else None

    def base(kind, ax):
        return {"type": kind, "title": ax.get_title() or None, "elements": []}

    def planar(kind, ax):
        c = base(kind, ax)
        xl, yl = ax.get_xlabel() or None, ax.get_ylabel() or None
        c.update(x_label=xl, y_label=yl, x_unit=unit_of(xl), y_unit=unit_of(yl))
        return c

    def swap_axes(c):
        c["x_label"], c["y_label"] = c["y_label"], c["x_label"]
        c["x_unit"], c["y_unit"] = c["y_unit"], c["x_unit"]

    def is_straight(line):
        """A two-point horizontal or vertical line (axhline, axvline, a
        grid drawn by hand)."""
        x, y = line.get_xdata(), line.get_ydata()
        return len(x) == 2 and len(y) == 2 and (x[0] == x[1] or y[0] == y[1])

    def axis_info(c, ax, name):
        import matplotlib.dates as mdates

        axis = ax.xaxis if name == "x" else ax.yaxis
        ticks = list(axis.get_ticklocs())
        labels = [t.get_text() for t in axis.get_ticklabels()]
        conv = axis.get_converter() if hasattr(axis, "get_converter") else axis.converter
        dates = isinstance(conv, (mdates.DateConverter, mdates.ConciseDateConverter)) or (
            type(conv).__name__ == "_SwitchableDateConverter")
        if dates:
            tick_values = [mdates.num2date(t).isoformat() for t in ticks]
            scale = "datetime"
        else:
            tick_values = [coord(t) for t in ticks]
            scale = axis.get_scale()
            if scale == "linear":
                cat = type(conv).__name__ == "StrCategoryConverter"
                scale = "categorical" if cat else "linear"
        c[f"{name}_ticks"] = tick_values
        c[f"{name}_tick_labels"] = labels
        c[f"{name}_scale"] = scale

    def point_chart(kind, ax):
        c = planar(kind, ax)
        axis_info(c, ax, "x")
        axis_info(c, ax, "y")
        return c

    def line_chart(ax):
        c = point_chart("line", ax)
        for line in ax.get_lines():
            if is_straight(line):
                continue
            label = line.get_label()
            if label.startswith("_child"):
                label = "Line " + label[6:]
            xs, ys = line.get_xdata(), line.get_ydata()
            c["elements"].append({"label": label,
                                  "points": [[coord(x), coord(y)] for x, y in zip(xs, ys)]})
        return c

    def scatter_chart(ax):
        c = point_chart("scatter", ax)
        for coll in ax.collections:
            c["elements"].append({"label": coll.get_label(),
                                  "points": [[coord(x), coord(y)]
                                             for x, y in coll.get_offsets()]})
        return c

    def tick_label_at(axis, value, fallback):
        ticks = list(axis.get_ticklocs())
        labels = [t.get_text() for t in axis.get_ticklabels()]
        for t, lab in zip(ticks, labels):
            if abs(t - value) <= 1e-9 * max(1.0, abs(value)):
                return lab
        return fallback

    def bar_chart(ax):
        c = planar("bar", ax)
        horizontal = None
        for i, cont in enumerate(ax.containers):
            rects = list(cont)
            if not rects:
                continue
            o = getattr(cont, "orientation", None)
            if o in ("vertical", "horizontal"):
                h = o == "horizontal"
            else:  # older matplotlib: equal heights but different widths = barh
                hs = [r.get_height() for r in rects]
                h = len(set(hs)) == 1 and len({r.get_width() for r in rects}) > 1
            horizontal = h if horizontal is None else horizontal
            group = cont.get_label()
            if not group or group.startswith("_container"):
                group = "Group " + (group[10:] if group else str(i))
            for r in rects:
                if h:
                    pos, value, axis = r.get_y() + r.get_height() / 2, r.get_width(), ax.yaxis
                else:
                    pos, value, axis = r.get_x() + r.get_width() / 2, r.get_height(), ax.xaxis
                label = tick_label_at(axis, pos, f"{num(pos):g}")
                c["elements"].append({"label": label, "group": group, "value": num(value)})
        if horizontal:
            swap_axes(c)
        return c

    def pie_chart(ax):
        c = base("pie", ax)
        for w in ax.patches:
            c["elements"].append({"label": w.get_label(),
                                  "angle": abs(num(w.theta2 - w.theta1)),
                                  "radius": num(w.r)})
        return c

    def box_chart(ax):
        from matplotlib.patches import PathPatch

        c = planar("box_and_whisker", ax)
        boxes = []
        for p in ax.patches:
            if not isinstance(p, PathPatch):
                continue
            v = p.get_path().vertices
            xs, ys = [num(x) for x in v[:, 0]], [num(y) for y in v[:, 1]]
            boxes.append({"x0": min(xs), "x1": max(xs), "y0": min(ys), "y1": max(ys)})
        if not boxes:
            return c
        # boxes of one width are vertical boxplots; of one height, horizontal
        horizontal = (len({b["y1"] - b["y0"] for b in boxes}) == 1 and
                      len({b["x1"] - b["x0"] for b in boxes}) > 1)
        if horizontal:
            swap_axes(c)
            for b in boxes:
                b["x0"], b["y0"], b["x1"], b["y1"] = b["y0"], b["x0"], b["y1"], b["x1"]
        for b in boxes:
            b.update(median=None, low=None, high=None, outliers=[])

        def owner(x):
            for b in boxes:
                if b["x0"] <= x <= b["x1"]:
                    return b
            return None

        for line in ax.lines:
            xs, ys = [num(x) for x in line.get_xdata()], [num(y) for y in line.get_ydata()]
            if horizontal:
                xs, ys = ys, xs
            if not xs or None in xs or None in ys:
                continue
            if line.get_linestyle() in ("None", "none", "", " ") and len(set(xs)) == 1:
                b = owner(xs[0])  # fliers
                if b is not None:
                    b["outliers"].extend(ys)
                continue
            if len(xs) != 2:
                continue
            b = owner(xs[0])
            if b is None or owner(xs[1]) is not b:
                continue
            lo, hi = min(ys), max(ys)
            if ys[0] == ys[1]:
                if b["y0"] <= ys[0] <= b["y1"] and xs[0] != xs[1]:
                    b["median"] = ys[0]
                continue
            if hi == b["y0"]:
                b["low"] = lo
            elif lo == b["y1"]:
                b["high"] = hi
        axis = ax.yaxis if horizontal else ax.xaxis
        for i, b in enumerate(boxes):
            mid = (b["x0"] + b["x1"]) / 2
            c["elements"].append({
                "label": tick_label_at(axis, mid, str(i + 1)),
                "min": b["low"] if b["low"] is not None else b["y0"],
                "first_quartile": b["y0"],
                "median": b["median"],
                "third_quartile": b["y1"],
                "max": b["high"] if b["high"] is not None else b["y1"],
                "outliers": b["outliers"],
            })
        return c

    def kind_of(ax):
        from matplotlib.collections import PathCollection
        from matplotlib.lines import Line2D
        from matplotlib.patches import PathPatch, Rectangle, Wedge
        from matplotlib.text import Text

        kids = getattr(ax, "_children", None)
        if kids is None:  # matplotlib < 3.5 keeps them by kind
            kids = ax.lines + ax.patches + ax.collections + ax.images + ax.texts
        arts = [a for a in kids if not isinstance(a, Text)]
        if all(isinstance(a, Line2D) for a in arts):
            return "line"
        if all(isinstance(a, (PathPatch, Line2D)) for a in arts):
            return "box_and_whisker"
        arts = [a for a in arts if not (isinstance(a, Line2D) and is_straight(a))]
        for kind, types in (("scatter", PathCollection), ("pie", Wedge), ("bar", Rectangle)):
            if all(isinstance(a, types) for a in arts):
                return kind
        return "unknown"

    def chart_of_axes(ax):
        kind = kind_of(ax)
        make = {"line": line_chart, "scatter": scatter_chart, "bar": bar_chart,
                "pie": pie_chart, "box_and_whisker": box_chart}.get(kind)
        return make(ax) if make else base("unknown", ax)

    def chart_of_figure(fig):
        axes = fig.get_axes()
        if not axes or not any(ax.has_data() for ax in axes):
            return None
        if len(axes) == 1:
            return chart_of_axes(axes[0])
        title = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else None
        return {"type": "superchart", "title": title or None,
                "elements": [chart_of_axes(ax) for ax in axes]}

    # ---- formatters ----------------------------------------------------------
    class ChartFormatter(BaseFormatter):
        """e2b/chart: a Figure's data. Errors give no chart, never a
        failed display."""

        format_type = Unicode("e2b/chart")
        print_method = ObjectName("_repr_e2b_chart_")
        _return_type = (dict,)

        def __call__(self, obj):
            mpl_figure = sys.modules.get("matplotlib.figure")
            if mpl_figure is not None and isinstance(obj, mpl_figure.Figure):
                try:
                    return plain(chart_of_figure(obj))
                except Exception:  # a figure we cannot read: png only
                    return None
            return super().__call__(obj)

    class DataFormatter(BaseFormatter):
        """e2b/data: a DataFrame's columns ({column: [values]})."""

        format_type = Unicode("e2b/data")
        print_method = ObjectName("_repr_e2b_data_")
        _return_type = (dict,)

        def __call__(self, obj):
            pd = sys.modules.get("pandas")
            if pd is not None and isinstance(obj, pd.DataFrame):
                try:
                    return plain(obj.to_dict(orient="list"))
                except Exception:
                    return None
            return super().__call__(obj)

    class ListJSONFormatter(JSONFormatter):
        """application/json also for lists and dicts (E2B's template)."""

        def __call__(self, obj):
            if isinstance(obj, (list, dict)):
                try:
                    data = plain(obj)
                    json.dumps(data, allow_nan=False)
                    return data, {"expanded": True}
                except (TypeError, ValueError, RecursionError):
                    pass
            return super().__call__(obj)

    df = ip.display_formatter
    df.formatters["e2b/chart"] = ChartFormatter(parent=df)
    df.formatters["e2b/data"] = DataFormatter(parent=df)
    df.formatters["application/json"] = ListJSONFormatter(parent=df)

    # ---- PIL: show() and save("file") display the image --------------------
    def patch_pil(mod):
        if getattr(mod, "_asb_patched", False):
            return
        mod._asb_patched = True
        from IPython.display import display

        original_save = mod.Image.save

        def show(self, title=None, **options):
            display(self)

        def save(self, fp, format=None, **params):
            if isinstance(fp, (str, bytes)) or hasattr(fp, "__fspath__"):
                display(self)
            return original_save(self, fp, format, **params)

        mod.Image.show = show
        mod.Image.save = save

    class PatchOnImport(importlib.abc.MetaPathFinder):
        """Runs a patch right after a module's first import, so nothing is
        imported before the user does."""

        def __init__(self, patches):
            self.patches = patches

        def find_spec(self, name, path=None, target=None):
            patch = self.patches.get(name)
            if patch is None:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            loader = spec.loader
            run = loader.exec_module

            def exec_module(module):
                run(module)
                try:
                    patch(module)
                except Exception:
                    pass

            loader.exec_module = exec_module
            return spec

    if "PIL.Image" in sys.modules:
        patch_pil(sys.modules["PIL.Image"])
    else:
        sys.meta_path.insert(0, PatchOnImport({"PIL.Image": patch_pil}))


_asb_install(get_ipython(), _asb_quick_io, _asb_streams)  # noqa: F821 (the kernel's)
del _asb_install, _asb_quick_io, _asb_streams
