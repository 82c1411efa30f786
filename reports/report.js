// hscc-trace report loader: unpacks the inlined plotly.js and each figure's data (gzip, base64),
// draws every figure and links the time axes of the figures of one flow (zoom one, all follow).
// No network: everything is in this file; the page's Content-Security-Policy forbids requests.
// Figures near the viewport are drawn first, the rest in document order in the background, so
// the first screen is ready quickly even when a report holds many flows.
// Zoom to the packet: a figure's first view is decimated; zoomed in, every series is re-drawn from
// its flow's full-resolution store (reports/store.py, unpacked on the first zoom into that flow):
// each event while a series has few enough in the window, the same first/min/max/last reduction
// of the window's events otherwise. The packet list under the figures follows the zoom.
"use strict";
(function () {
  const t0 = performance.now();
  const status = (window.hsccStatus = {
    expected: 0, rendered: 0, done: false, error: null, ms: null, firstScreenMs: null, firstFlowMs: null, steps: [],
    zooms: 0,
  });
  window.hsccRenderAll = () => Promise.resolve(status.rendered); // replaced once figures exist
  const step = (what, t) => status.steps.push([what, Math.round(performance.now() - t)]);

  function bytesOf(b64) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64);
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  async function gunzip(id) {
    const el = document.getElementById(id);
    const stream = new Blob([bytesOf(el.textContent.trim())]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  }

  function fail(err) {
    status.error = String(err && err.message ? err.message : err);
    const box = document.getElementById("render-error");
    box.textContent = "The figures could not be drawn: " + status.error;
    box.hidden = false;
    console.error(err);
  }

  // --- full-resolution stores (reports/store.py) -------------------------------------------------
  const RC = (() => {
    const el = document.getElementById("report-config");
    return el ? JSON.parse(el.textContent) : {};
  })();
  const DETAIL = RC.detailPoints || 5000; // events per series in view drawn one by one
  const COLUMNS = RC.columns || 500; // columns of the reduction beyond that
  const LIST_ROWS = RC.listRows || 500; // the packet list shows at most this many events
  const MARK_MAX = 800; // a dot per event once a series has at most this many in view

  const domReady = () => document.readyState === "loading"
    ? new Promise((r) => document.addEventListener("DOMContentLoaded", () => r(), { once: true }))
    : Promise.resolve();

  // One column of a store: zigzag varints (delta-coded or not, scaled by 10^-d, nulls in a bitmap) or
  // raw float64. Rows are read through checkpoints every 1024 rows (byte offset, running sum), so a
  // slice costs its own length plus at most 1023 rows, and no column is ever expanded whole.
  class Col {
    constructor(st, spec, n) {
      const o = st.base + spec.o;
      this.n = n;
      this.z = spec.z;
      this.w = spec.w;
      this.scale = Math.pow(10, -spec.d);
      this.v = spec.w === 8 ? new Float64Array(st.buf, o, n) : new Uint8Array(st.buf, o, spec.l);
      this.m = spec.m >= 0 ? new Uint8Array(st.buf, st.base + spec.m, (n + 7) >> 3) : null;
      this.ckPos = null;
      this.ckAcc = null;
    }
    // read rows [from, to) starting at byte `pos` with running sum `acc`; call put(i, value) for rows ≥ i0
    run(pos, acc, from, to, i0, put) {
      const b = this.v;
      for (let i = from; i < to; i++) {
        let zz = 0, mul = 1, c;
        do { c = b[pos++]; zz += (c & 127) * mul; mul *= 128; } while (c & 128);
        const q = zz % 2 ? -(zz + 1) / 2 : zz / 2;
        const val = this.z ? (acc += q) : q;
        if (i >= i0) put(i, val);
      }
      return [pos, acc];
    }
    checkpoints() {
      if (this.ckPos) return;
      const k = (this.n >> 10) + 1;
      this.ckPos = new Float64Array(k);
      this.ckAcc = new Float64Array(k);
      let pos = 0, acc = 0;
      for (let c = 0; c < k; c++) {
        this.ckPos[c] = pos;
        this.ckAcc[c] = acc;
        [pos, acc] = this.run(pos, acc, c << 10, Math.min((c + 1) << 10, this.n), this.n, null);
      }
    }
    slice(i0, i1) {
      const out = new Float64Array(Math.max(i1 - i0, 0));
      if (i1 <= i0) return out;
      if (this.w === 8) out.set(this.v.subarray(i0, i1));
      else {
        this.checkpoints();
        const c = i0 >> 10, sc = this.scale;
        this.run(this.ckPos[c], this.ckAcc[c], c << 10, i1, i0, (i, val) => { out[i - i0] = val * sc; });
      }
      if (this.m) for (let i = i0; i < i1; i++) if (this.m[i >> 3] & (1 << (i & 7))) out[i - i0] = NaN;
      return out;
    }
  }

  class Store {
    constructor(buf) {
      const head = new Uint8Array(buf, 0, 4);
      if (String.fromCharCode(...head) !== "HST1") throw new Error("not a report store");
      const hl = new DataView(buf).getUint32(4, true);
      this.h = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 8, hl)));
      this.base = 8 + hl + ((8 - ((8 + hl) % 8)) % 8);
      this.buf = buf;
      this.meta = this.h.meta || {};
      this.cols = new Map();
      this.tabs = new Map();
    }
    col(i, n) {
      let c = this.cols.get(i + ":" + n);
      if (!c) { c = new Col(this, this.h.cols[i], n); this.cols.set(i + ":" + n, c); }
      return c;
    }
    table(name) {
      if (this.tabs.has(name)) return this.tabs.get(name);
      const d = this.h.tables[name];
      if (!d) return null;
      const t = this.col(d.t, d.n).slice(0, d.n);
      let key = t; // a non-decreasing copy of the times (a capture's clock may step back) to search in
      for (let i = 1; i < t.length; i++) if (t[i] < t[i - 1]) {
        key = Float64Array.from(t);
        for (let j = 1; j < key.length; j++) if (key[j] < key[j - 1]) key[j] = key[j - 1];
        break;
      }
      const tb = {
        n: d.n, t, key,
        frame: d.frame == null ? null : this.col(d.frame, d.n),
        c: (nm) => (d.cols[nm] == null ? null : this.col(d.cols[nm], d.n)),
      };
      this.tabs.set(name, tb);
      return tb;
    }
  }

  function lowerBound(a, x) { let lo = 0, hi = a.length; while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; } return lo; }
  function upperBound(a, x) { let lo = 0, hi = a.length; while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] <= x) lo = m + 1; else hi = m; } return lo; }

  const storePromises = new Map(); // section -> Promise<Store | null>
  function storeOf(section) {
    if (!storePromises.has(section)) {
      storePromises.set(section, (async () => {
        await domReady();
        const el = document.getElementById("store-" + section);
        if (!el) return null;
        const t = performance.now();
        const stream = new Blob([bytesOf(el.textContent.trim())]).stream().pipeThrough(new DecompressionStream("gzip"));
        const st = new Store(await new Response(stream).arrayBuffer());
        step("unpack store " + section, t);
        return st;
      })());
    }
    return storePromises.get(section);
  }

  // first/min/max/last of each of `cols` equal columns over [a, b] (as reports/decimate.py): indices into xs
  function m4(xs, ys, idx, a, b, cols) {
    const out = [];
    const span = b - a;
    let i = 0;
    while (i < idx.length) {
      const col = (k) => Math.min(Math.max(Math.floor(((xs[idx[k]] - a) / span) * cols), 0), cols - 1);
      const c = col(i);
      let j = i, lo = i, hi = i;
      while (j + 1 < idx.length && col(j + 1) === c) {
        j++;
        if (ys[idx[j]] < ys[idx[lo]]) lo = j;
        if (ys[idx[j]] > ys[idx[hi]]) hi = j;
      }
      const picks = [i, Math.min(lo, hi), Math.max(lo, hi), j];
      let prev = -1;
      for (const p of picks) if (p !== prev) { if (p > prev) out.push(idx[p]); prev = p; }
      i = j + 1;
    }
    return out;
  }

  function plotPx(div, tr, axis) { // the length in px of a trace's axis
    const fl = div._fullLayout;
    const ax = fl && fl[axis + ((tr[axis] || axis).slice(1))];
    return (ax && ax._length) || 300;
  }

  // The trace's series for the time window [a, b] from the store: {x, y, customdata, …, n: events in view}
  function detailTrace(div, tr, orig, src, st, a, b, shared) {
    const tb = st.table(src.tb);
    if (!tb) return null;
    if (src.k === "band") {
      const ends = tb.c("e");
      const i1 = upperBound(tb.key, b);
      const e = ends.slice(0, i1);
      const minW = (b - a) / plotPx(div, tr, "xaxis");
      const xs = [], ys = [];
      let cs = null, ce = null;
      const flush = () => {
        if (cs === null) return;
        const e2 = Math.max(ce, cs + minW);
        xs.push(cs, cs, e2, e2, NaN);
        ys.push(src.y0, src.y1, src.y1, src.y0, NaN);
      };
      for (let i = 0; i < i1; i++) {
        if (e[i] < a) continue;
        const s0 = tb.t[i], e0 = e[i];
        if (cs !== null && s0 <= ce + minW) ce = Math.max(ce, e0);
        else { flush(); cs = s0; ce = e0; }
      }
      flush();
      return src.main ? { x: xs, y: ys, fillcolor: src.fc, n: xs.length / 5 } : { x: [], y: [], n: 0 };
    }
    const bar = src.k === "bar";
    let i0 = lowerBound(tb.key, a), i1 = upperBound(tb.key, b);
    if (!bar) { i0 = Math.max(i0 - 1, 0); i1 = Math.min(i1 + 1, tb.n); } // a line runs on to the edges
    const x = tb.t.subarray(i0, i1);
    const f = src.f || 1;
    let y, hi = null;
    if (bar) {
      y = tb.c(src.lo).slice(i0, i1);
      hi = new Float64Array(y.length);
      for (const nm of src.hi) { const c = tb.c(nm).slice(i0, i1); for (let i = 0; i < c.length; i++) hi[i] += c[i]; }
    } else {
      y = tb.c(src.y).slice(i0, i1);
      for (const nm of src.add || []) { const c = tb.c(nm).slice(i0, i1); for (let i = 0; i < c.length; i++) y[i] += c[i]; }
      if (f !== 1) for (let i = 0; i < y.length; i++) y[i] *= f;
    }
    const w = src.w ? tb.c(src.w[0]).slice(i0, i1) : null;
    const idx = [];
    let inView = 0;
    for (let i = 0; i < y.length; i++) {
      if (Number.isNaN(y[i]) || (w && w[i] !== src.w[1])) continue;
      idx.push(i);
      if (x[i] >= a && x[i] <= b) inView++;
    }
    const frames = tb.frame ? tb.frame.slice(i0, i1) : null;
    const detailed = inView <= DETAIL;
    let pick = idx;
    if (!detailed) {
      if (bar) return barEnvelope(div, tr, src, x, y, hi, idx, a, b, inView);
      pick = shared ? shared : m4(x, y, idx, a, b, COLUMNS);
    }
    if (bar) { // each segment / SACK block a vertical bar, each RTT sample a dot; the hover names its frame
      if (src.mark) {
        const xs = new Float64Array(pick.length), ys = new Float64Array(pick.length), cd = new Float64Array(pick.length);
        pick.forEach((k, j) => { xs[j] = x[k]; ys[j] = y[k]; cd[j] = frames ? frames[k] : NaN; });
        return { x: xs, y: ys, customdata: cd, mode: "markers", fill: "none", n: inView,
                 marker: { color: tr.fillcolor, size: 5 }, hoverinfo: undefined, hoveron: "points",
                 hovertemplate: (src.ht || "%{y}") + " · frame %{customdata}" };
      }
      const n = pick.length, xs = new Float64Array(3 * n), ys = new Float64Array(3 * n), cd = new Float64Array(3 * n);
      pick.forEach((k, j) => {
        xs[3 * j] = xs[3 * j + 1] = x[k]; xs[3 * j + 2] = NaN;
        ys[3 * j] = y[k]; ys[3 * j + 1] = hi[k]; ys[3 * j + 2] = NaN;
        cd[3 * j] = cd[3 * j + 1] = frames ? frames[k] : NaN; cd[3 * j + 2] = NaN;
      });
      return { x: xs, y: ys, customdata: cd, mode: "lines", fill: "none", n: inView, connectgaps: false,
               line: { color: tr.fillcolor, width: 2 }, hoverinfo: undefined, hoveron: "points",
               hovertemplate: (src.ht || "%{y}") + " · frame %{customdata}" };
    }
    const n = pick.length, xs = new Float64Array(n), ys = new Float64Array(n);
    const cd = new Array(n);
    pick.forEach((k, j) => {
      xs[j] = x[k]; ys[j] = y[k];
      const fr = frames ? frames[k] : null;
      cd[j] = src.b ? [fr, Math.round(y[k] * src.b)] : fr;
    });
    const out = { x: xs, y: ys, customdata: cd, n: inView, pick };
    if ((orig.mode || "lines") === "lines") {
      out.mode = detailed && inView <= MARK_MAX ? "lines+markers" : "lines";
      if (out.mode !== "lines") out.marker = { size: 4, color: (tr.line || {}).color };
    }
    return out;
  }

  // More bars in view than DETAIL: one bar per column from its lowest to its highest value, as filled
  // rectangles 0.6 column wide and at least src.px pixels high (as reports/figures.py does)
  function barEnvelope(div, tr, src, x, y, hi, idx, a, b, inView) {
    const span = b - a, width = span / COLUMNS;
    const los = new Float64Array(COLUMNS).fill(Infinity), his = new Float64Array(COLUMNS).fill(-Infinity);
    const ts = new Float64Array(COLUMNS), cnt = new Float64Array(COLUMNS);
    let ylo = Infinity, yhi = -Infinity;
    for (const k of idx) {
      if (x[k] < a || x[k] > b) continue;
      const c = Math.min(Math.max(Math.floor(((x[k] - a) / span) * COLUMNS), 0), COLUMNS - 1);
      if (y[k] < los[c]) los[c] = y[k];
      if (hi[k] > his[c]) his[c] = hi[k];
      ts[c] += x[k]; cnt[c]++;
      if (y[k] < ylo) ylo = y[k];
      if (hi[k] > yhi) yhi = hi[k];
    }
    const minH = ((yhi - ylo) * (src.px || 3)) / plotPx(div, tr, "yaxis");
    const xs = [], ys = [];
    for (let c = 0; c < COLUMNS; c++) {
      if (!cnt[c]) continue;
      const t = ts[c] / cnt[c], grow = Math.max(minH - (his[c] - los[c]), 0) / 2;
      const l = los[c] - grow, h = his[c] + grow, s = t - 0.3 * width, e = t + 0.3 * width;
      xs.push(s, s, e, e, NaN);
      ys.push(l, h, h, l, NaN);
    }
    return { x: xs, y: ys, customdata: null, mode: "none", fill: "toself", n: inView,
             hoverinfo: "name", hoveron: "fills", hovertemplate: null };
  }

  function merged(...parts) { // a new trace object: later parts win, undefined removes a key
    const out = Object.assign({}, ...parts);
    for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
    return out;
  }

  const RESTORE = ["x", "y", "customdata", "mode", "fill", "fillcolor", "marker", "hovertemplate", "hoverinfo", "hoveron", "connectgaps", "line"];

  // Re-draw the traces of `div` for the time window `range` (null: the first view) from store `st`.
  function detailData(div, range, st) {
    const H = div._hscc;
    const wide = !range || !st || (H.span && range[1] - range[0] >= 0.98 * H.span && range[0] <= H.x0 + 0.01 * H.span);
    const data = div.data.map((tr, i) => (wide && H.orig[i] ? merged(tr, H.orig[i]) : tr));
    if (wide) { H.detail = null; return data; }
    const [a, b] = range;
    const groups = new Map(); // shared decimation of a group (Compound's stack)
    const counts = {};
    div.data.forEach((tr, i) => {
      const src = H.src[i];
      if (!src || hidden(tr)) return; // hidden series are re-drawn when shown (see buildLegends)
      let shared = null;
      if (src.g) {
        if (!groups.has(src.g)) { // the union of each member's reduction, computed once
          let union = null;
          div.data.forEach((m, j) => {
            if (!H.src[j] || H.src[j].g !== src.g) return;
            const r = detailTrace(div, m, H.orig[j], H.src[j], st, a, b, null);
            if (r && r.pick && r.n > DETAIL) union = union ? Array.from(new Set([...union, ...r.pick])).sort((p, q) => p - q) : r.pick;
          });
          groups.set(src.g, union);
        }
        shared = groups.get(src.g);
      }
      const r = detailTrace(div, tr, H.orig[i], src, st, a, b, shared);
      if (!r) return;
      counts[i] = r.n;
      delete r.n; delete r.pick;
      data[i] = merged(tr, H.orig[i], r);
    });
    H.detail = counts; // events of each re-drawn trace inside the window (for tests and tools)
    return data;
  }

  // --- linked time axes: one group per flow -----------------------------------------------------
  const groups = new Map(); // section id -> {divs: [], range: null | [a, b], gen}
  function group(id) {
    if (!groups.has(id)) groups.set(id, { id, divs: [], range: null, gen: 0 });
    return groups.get(id);
  }
  // After a time-range change, fit each y axis to the data visible in that range (shaded
  // bands excluded), so zooming into a second of a long flow shows its detail.
  function fitY(div, range) {
    const upd = {};
    const ext = new Map();
    for (const tr of div.data) {
      if (tr.visible === false || tr.visible === "legendonly" || (tr.fill === "toself" && tr.meta !== "data") || !tr.x || !tr.y) continue;
      const ax = "yaxis" + ((tr.yaxis || "y").slice(1));
      let [lo, hi] = ext.get(ax) || [Infinity, -Infinity];
      const xs = tr.x, ys = tr.y;
      for (let i = 0; i < xs.length; i++) {
        const x = xs[i], y = ys[i];
        if (x == null || y == null || x < range[0] || x > range[1]) continue;
        if (y < lo) lo = y;
        if (y > hi) hi = y;
      }
      ext.set(ax, [lo, hi]);
    }
    for (const [ax, [lo, hi]] of ext) {
      if (!isFinite(lo)) continue;
      const pad = (hi - lo) * 0.06 || Math.abs(hi) * 0.06 || 1;
      upd[ax + ".range"] = [lo - pad, hi + pad];
    }
    return Object.keys(upd).length ? Plotly.relayout(div, upd) : Promise.resolve();
  }

  function resetY(div) {
    const upd = {};
    for (const k of Object.keys(div.layout)) if (/^yaxis\d*$/.test(k)) upd[k + ".autorange"] = true;
    return Plotly.relayout(div, upd);
  }

  // Draw `div` for the group's current time range: data from the store, the x range (other figures
  // of the flow follow the one zoomed), then the y axes fitted to what is in view.
  async function redraw(g, div, st, keepY) {
    const range = g.range;
    let t = performance.now();
    const data = detailData(div, range, st);
    step("zoom data " + div.id, t);
    t = performance.now();
    const xa = Object.assign({}, div.layout.xaxis || {});
    if (range) { xa.range = range.slice(); xa.autorange = false; } else { delete xa.range; xa.autorange = true; }
    const lay = Object.assign({}, div.layout, { xaxis: xa });
    if (range) for (const k of Object.keys(lay)) if (/^yaxis\d*$/.test(k)) lay[k] = Object.assign({}, lay[k]);
    await Plotly.react(div, data, lay);
    if (!keepY) await (range ? fitY(div, range) : resetY(div));
    step("zoom draw " + div.id, t);
  }

  async function follow(g, source, userY) {
    const gen = ++g.gen;
    const st = g.range ? await storeOf(g.id).catch((err) => { console.error(err); return null; }) : null;
    if (gen !== g.gen) return; // a newer zoom came in meanwhile
    for (const o of g.divs) {
      if (gen !== g.gen) return;
      await redraw(g, o, st, o === source && userY);
    }
    if (gen === g.gen) {
      status.zooms++;
      packetList(g, st);
    }
  }

  function attach(g, div) {
    g.divs.push(div);
    div.on("plotly_relayout", (ev) => {
      let x = false, auto = false;
      for (const k of Object.keys(ev)) {
        if (/^xaxis\d*\.range(\[[01]\])?$/.test(k)) x = true;
        else if (/^xaxis\d*\.autorange$/.test(k) && ev[k]) auto = x = true;
      }
      if (!x) return;
      const xr = div.layout.xaxis && div.layout.xaxis.range;
      const next = auto || !xr ? null : [Number(xr[0]), Number(xr[1])];
      const same = (p, q) => (p === null && q === null) || (p && q && Math.abs(p[0] - q[0]) < 1e-12 && Math.abs(p[1] - q[1]) < 1e-12);
      if (same(next, g.range)) return; // our own re-draw, or nothing changed
      g.range = next;
      const userY = Object.keys(ev).some((k) => /^yaxis\d*\.range/.test(k)); // a box zoom chose y itself
      follow(g, div, userY).catch(fail);
    });
  }

  // --- the packet list under a flow's main figure: the events of the visible window -------------
  const fmt = (v, d) => (v == null || Number.isNaN(v) ? "" : v.toFixed(d));
  function packetList(g, st) {
    const box = document.getElementById("packets-" + g.id);
    if (!box || !st) return;
    const say = (text) => { box.replaceChildren(); const p = document.createElement("p"); p.className = "muted"; p.textContent = text; box.append(p); };
    if (!g.range) { say(`Packet list: zoom in until the visible window holds at most ${LIST_ROWS} events (ACKs and data segments) to list them here, frame by frame.`); return; }
    const [a, b] = g.range;
    const A = st.table("a"), S = st.table("s"), K = st.table("k");
    const win = (T) => (T ? [lowerBound(T.key, a), upperBound(T.key, b)] : [0, 0]);
    const [a0, a1] = win(A), [s0, s1] = win(S);
    const total = (a1 - a0) + (s1 - s0);
    if (total > LIST_ROWS) {
      say(`Packet list: the visible window (${a.toFixed(6)}–${b.toFixed(6)} s) holds ${total.toLocaleString("en")} events; zoom in to at most ${LIST_ROWS} to list them.`);
      return;
    }
    const M = st.meta, E = M.enums || {}, AB = M.ackBits || {}, SB = M.segBits || {};
    const rows = [];
    const bit = (v, k) => (v >> k) & 1;
    if (S && s1 > s0) {
      const fr = S.frame.slice(s0, s1), seq = S.c("seq").slice(s0, s1), ln = S.c("len").slice(s0, s1);
      const kind = S.c("kind").slice(s0, s1), info = S.c("info").slice(s0, s1);
      for (let i = 0; i < fr.length; i++) {
        const v = info[i], f = [];
        const k = E.kind[kind[i]];
        if (k && k !== "new") f.push(k.replace(/_/g, " "));
        const pr = E.probe[v & 3];
        if (pr && pr !== "none") f.push(pr.replace(/_/g, " "));
        if (bit(v, SB.syn_fin)) f.push(seq[i] === 0 ? "SYN" : "FIN");
        if (((v >> 2) & 3) === 3) f.push("CE");
        rows.push({ frame: fr[i], t: S.t[s0 + i], dir: "data →", num: seq[i], len: ln[i], flags: f.join(", ") });
      }
    }
    const sacks = new Map();
    if (K) {
      const [k0, k1] = win(K);
      const kf = K.frame.slice(k0, k1), kl = K.c("left").slice(k0, k1), kr = K.c("right").slice(k0, k1);
      for (let i = 0; i < kf.length; i++) {
        if (!sacks.has(kf[i])) sacks.set(kf[i], []);
        sacks.get(kf[i]).push(kl[i] + "–" + kr[i]);
      }
    }
    const algos = (M.algos || []).filter(([, tb]) => tb === "a");
    if (A && a1 > a0) {
      const fr = A.frame.slice(a0, a1), ack = A.c("ack").slice(a0, a1), info = A.c("info").slice(a0, a1);
      const dup = A.c("dupack").slice(a0, a1), rtt = A.c("rtt").slice(a0, a1), out = A.c("outstanding").slice(a0, a1);
      const rw = A.c("rwnd").slice(a0, a1);
      const cw = algos.map(([, , nm]) => A.c(nm).slice(a0, a1));
      for (let i = 0; i < fr.length; i++) {
        const v = info[i], f = [];
        if (dup[i] > 0) f.push("dup ACK #" + dup[i]);
        const st2 = E.state[v & 3];
        if (st2 && st2 !== "open") f.push(st2);
        const ce = ((v >> 2) & 7) - 1;
        if (ce >= 0) f.push(E.cong[ce].replace(/_/g, " ") + " begins");
        if (bit(v, AB.sack)) f.push("SACK");
        if (bit(v, AB.dsack)) f.push("D-SACK");
        if (bit(v, AB.ece)) f.push("ECE");
        if (bit(v, AB.spurious_undo)) f.push("spurious: undo");
        if (bit(v, AB.round_end)) f.push("round end");
        rows.push({ frame: fr[i], t: A.t[a0 + i], dir: "← ACK", num: ack[i], flight: out[i] / M.mss, rwnd: rw[i],
                    rtt: rtt[i], sack: (sacks.get(fr[i]) || []).join(" "), flags: f.join(", "), cw: cw.map((c) => c[i]) });
      }
    }
    rows.sort((p, q) => p.frame - q.frame);
    const table = document.createElement("table");
    table.className = "packet-list";
    const head = ["frame", "time (s)", "dir", "seq / ack (bytes)", "len (bytes)", "in flight (packets)", "rwnd (bytes)",
                  "flags / analysis", "RTT sample (ms)", "SACK blocks", ...algos.map(([lab]) => plain(lab) + " cwnd (packets)")];
    const tr0 = document.createElement("tr");
    for (const h of head) { const th = document.createElement("th"); th.textContent = h; tr0.append(th); }
    const thead = document.createElement("thead"); thead.append(tr0); table.append(thead);
    const tbody = document.createElement("tbody");
    for (const r of rows) {
      const tr = document.createElement("tr");
      tr.className = r.dir === "data →" ? "seg" : "ack";
      const cells = [String(r.frame), fmt(r.t, 6), r.dir, String(r.num), r.len == null ? "" : String(r.len),
                     fmt(r.flight, 1), r.rwnd == null ? "" : String(r.rwnd), r.flags, fmt(r.rtt, 3), r.sack || "",
                     ...(r.cw || algos.map(() => null)).map((v) => fmt(v, 2))];
      for (const c of cells) { const td = document.createElement("td"); td.textContent = c; tr.append(td); }
      tbody.append(tr);
    }
    table.append(tbody);
    const cap = document.createElement("p");
    cap.className = "muted";
    cap.textContent = `Packet list: ${rows.length} events between ${a.toFixed(6)} and ${b.toFixed(6)} s (frame numbers as in Wireshark; windows of the replayed algorithms at each ACK).`;
    const wrap = document.createElement("div");
    wrap.className = "scroll";
    wrap.append(table);
    box.replaceChildren(cap, wrap);
  }

  // --- legends: plain HTML beside the figure, one per panel (block) --------------------------------
  // plotly's SVG legend measures every entry's text while drawing (about a sixth of the drawing
  // time of a flow's figures); an HTML list costs next to nothing and toggles series the same way:
  // a click hides or shows the entry's series (all of its legend group within the panel).
  const LEGEND_W = 250; // px to the right of the plot
  const decoder = document.createElement("textarea");
  function plain(s) { decoder.innerHTML = String(s == null ? "" : s); return decoder.value; } // names arrive HTML-escaped

  const hidden = (tr) => tr.visible === false || tr.visible === "legendonly";

  function swatch(tr) {
    const sw = document.createElement("span");
    sw.className = "sw";
    const line = tr.line || {};
    const marker = tr.marker || {};
    if (tr.fill === "toself" || tr.stackgroup) {
      sw.style.background = tr.fillcolor || line.color || "#999";
      if (tr.stackgroup) sw.style.opacity = "0.5";
      sw.classList.add("box");
    } else if ((tr.mode || "lines").indexOf("lines") < 0) {
      sw.textContent = /^x/.test(marker.symbol || "") ? "×" : /triangle/.test(marker.symbol || "") ? "▲" : /open/.test(marker.symbol || "") ? "○" : "●";
      sw.style.color = marker.color || (marker.line && marker.line.color) || "#444";
    } else {
      const dash = line.dash ? (line.dash === "dot" ? "dotted" : "dashed") : "solid";
      sw.style.borderTop = Math.max(1, Math.min(3, Math.round(line.width || 2))) + "px " + dash + " " + (line.color || "#444");
      sw.classList.add("line");
    }
    return sw;
  }

  function buildLegends(div, f) {
    const wrap = div.parentNode;
    for (const old of wrap.querySelectorAll(":scope > .legend")) old.remove();
    const lay = f.layout;
    const m = lay.margin || {};
    lay.showlegend = false;
    lay.margin = Object.assign({}, m, { r: LEGEND_W + 10 });
    const plotH = lay.height - (m.t || 0) - (m.b || 0);
    const items = []; // [entry element, trace indices]
    const blocks = f.blocks || [];
    blocks.forEach((b, bi) => {
      const ax = lay["yaxis" + (b.yaxes[0] || "y").slice(1)] || {};
      const top = (m.t || 0) + (1 - ((ax.domain || [0, 1])[1])) * plotH;
      const next = blocks[bi + 1] && lay["yaxis" + blocks[bi + 1].yaxes[0].slice(1)];
      const bottom = next ? (m.t || 0) + (1 - next.domain[1]) * plotH - 40 : lay.height - (m.b || 0);
      const box = document.createElement("div");
      box.className = "legend";
      box.style.top = Math.round(top) + "px";
      box.style.maxHeight = Math.max(60, Math.round(bottom - top)) + "px";
      box.style.width = LEGEND_W + "px";
      const mine = f.data.map((tr, i) => [tr, i]).filter(([tr]) => (tr.legend || "legend") === b.legend);
      const shown = mine.filter(([tr]) => tr.showlegend !== false)
        .sort((p, q) => ((p[0].legendrank ?? 1000) - (q[0].legendrank ?? 1000)) || p[1] - q[1]);
      for (const [tr, i] of shown) {
        const el = document.createElement("button");
        el.type = "button";
        el.className = "item";
        el.append(swatch(tr));
        const name = document.createElement("span");
        name.textContent = plain(tr.name);
        el.append(name);
        const idx = tr.legendgroup ? mine.filter(([o]) => o.legendgroup === tr.legendgroup).map(([, j]) => j) : [i];
        el.addEventListener("click", () => {
          Plotly.restyle(div, { visible: hidden(div.data[i]) ? true : false }, idx)
            .then(() => div._hsccShown && div._hsccShown()); // zoomed in: a series shown now is drawn in detail
          refresh();
        });
        items.push([el, i]);
        box.append(el);
      }
      if (shown.length) wrap.append(box);
    });
    function refresh() {
      for (const [el, i] of items) el.classList.toggle("off", hidden(div.data[i]));
    }
    // Series hidden at first ("legendonly") become visible: false, which plotly skips entirely
    // (no defaults, no calc): the legend is ours, so plotly need not know about them until shown.
    for (const tr of f.data) if (tr.visible === "legendonly") tr.visible = false;
    return refresh;
  }

  async function main() {
    const template = JSON.parse(document.getElementById("plotly-template").textContent);
    const config = JSON.parse(document.getElementById("plotly-config").textContent);
    const payloads = Array.from(document.querySelectorAll("script[data-flow-payload]"));
    status.expected = Number(document.body.dataset.figures || 0);
    if (!payloads.length) {
      status.done = true;
      status.ms = status.firstScreenMs = performance.now() - t0;
      return;
    }
    if (typeof DecompressionStream === "undefined")
      throw new Error("this browser lacks DecompressionStream (needs Chrome/Edge 80+, Firefox 113+, Safari 16.4+)");
    let t = performance.now();
    const js = await gunzip("plotlyjs");
    step("unpack plotly.js", t);
    t = performance.now();
    const s = document.createElement("script");
    s.textContent = js;
    document.head.appendChild(s);
    step("load plotly.js", t);
    if (!window.Plotly) throw new Error("plotly.js did not load");

    // One job per figure div (each has its own payload), in document order; a payload is
    // unpacked when its figure is drawn.
    const figsOf = new Map(); // payload id -> Promise<[{div, data, layout}]>
    const jobs = [];
    for (const p of payloads) {
      const div = document.getElementById(p.dataset.div);
      if (div) jobs.push({ div, payload: p, section: p.dataset.section, i: jobs.length });
    }
    // Background order: the four main figures of every flow, then the signal panels. A report
    // with more than EAGER_MAX figures draws signal panels only as they come near the viewport
    // (or when window.hsccRenderAll() is called), so a capture with many flows does not keep the
    // browser busy drawing hundreds of figures nobody has scrolled to.
    const EAGER_MAX = 8;
    const isAlgo = (j) => j.div.dataset.panel === "signals";
    const background = jobs.slice().sort((a, b) => (isAlgo(a) - isAlgo(b)) || a.i - b.i);
    let forceAll = jobs.length <= EAGER_MAX;
    const pending = new Set(jobs);
    const near = new Set(); // jobs whose div is within about a screen of the viewport
    let wake = null;
    const wakeUp = () => { if (wake) { const w = wake; wake = null; w(); } };
    const byDiv = new Map(jobs.map((j) => [j.div, j]));
    const io = "IntersectionObserver" in window ? new IntersectionObserver((entries) => {
      for (const en of entries) {
        const job = byDiv.get(en.target);
        if (en.isIntersecting) near.add(job);
        else near.delete(job);
      }
      wakeUp();
    }, { rootMargin: "800px 0px" }) : null;
    if (io) for (const j of jobs) io.observe(j.div);
    else forceAll = true;
    let resolveAll;
    const allDrawn = new Promise((r) => { resolveAll = r; });
    // hsccRenderAll: draw every figure now and lay all of them out, also off screen (for printing,
    // screenshots of the whole page); otherwise figures off screen are not laid out or painted.
    window.hsccRenderAll = () => {
      forceAll = true;
      document.documentElement.classList.add("show-all");
      wakeUp();
      return allDrawn.then(() => status.rendered);
    };
    await new Promise((r) => requestAnimationFrame(() => r())); // let the observer report the first screen
    const firstScreen = new Set(Array.from(near).filter((j) => pending.has(j)));

    async function draw(job) {
      const id = job.payload.id;
      if (!figsOf.has(id)) {
        const tu = performance.now();
        figsOf.set(id, gunzip(id).then((txt) => JSON.parse(txt)));
        await figsOf.get(id);
        step("unpack " + id, tu);
      }
      const figs = await figsOf.get(id);
      const f = figs.find((x) => x.div === job.div.id);
      const g = group(job.section);
      // each trace's first-view state (restored when zoomed out) and where its series is in the store
      const H = (job.div._hscc = { orig: [], src: [], span: null, x0: 0, detail: null });
      for (const tr of f.data) {
        H.src.push(tr._src || null);
        delete tr._src;
        if (tr._bytes) { // a window in packets: the hover gives [frame, bytes]
          const b = tr._bytes, cd = tr.customdata || [];
          tr.customdata = cd.map((fr, i) => [fr, Math.round(tr.y[i] * b)]);
          delete tr._bytes;
        }
        const o = {};
        for (const k of RESTORE) o[k] = tr[k];
        H.orig.push(o);
      }
      const xr0 = f.layout.xaxis && f.layout.xaxis.range;
      if (xr0) { H.x0 = xr0[0]; H.span = xr0[1] - xr0[0]; }
      f.layout.template = template;
      if (g.range) f.layout.xaxis = Object.assign({}, f.layout.xaxis || {}, { range: g.range.slice(), autorange: false });
      const td = performance.now();
      const refreshLegend = buildLegends(job.div, f);
      await Plotly.newPlot(job.div, f.data, f.layout, config);
      refreshLegend();
      if (g.range) await redraw(g, job.div, await storeOf(g.id).catch(() => null), false);
      step(job.div.dataset.panel, td);
      job.div.style.minHeight = "";
      attach(g, job.div);
      job.div._hsccShown = () => (g.range ? follow(g, null, false).catch(fail) : null);
      status.rendered++;
    }

    function finishScheduled() {
      if (status.done) return;
      status.ms = performance.now() - t0;
      if (status.firstScreenMs == null) status.firstScreenMs = status.ms;
      status.sinceNavigation = performance.now();
      status.onDemand = pending.size; // signal panels waiting to be scrolled to
      status.done = true;
      document.documentElement.dataset.rendered = "true";
      const note = document.getElementById("render-time");
      if (note) note.textContent = "Figures drawn in " + (status.ms / 1000).toFixed(2) + " s" +
        (pending.size ? " (" + pending.size + " signal panels are drawn as you scroll to them)." : ".");
    }

    while (pending.size) {
      let job = null;
      for (const j of near) if (pending.has(j)) { job = j; break; }
      if (!job) job = background.find((j) => pending.has(j) && (forceAll || !isAlgo(j)));
      if (!job) {
        finishScheduled();
        await new Promise((r) => { wake = r; });
        continue;
      }
      pending.delete(job);
      if (io) io.unobserve(job.div);
      near.delete(job);
      await draw(job);
      if (status.firstFlowMs == null && job.section === jobs[0].section && !isAlgo(job)) {
        status.firstFlowMs = performance.now() - t0; // the first flow's main figure, since the loader started
        status.firstFlowSinceNavigation = performance.now(); // … since navigation began
      }
      firstScreen.delete(job);
      if (!firstScreen.size && status.firstScreenMs == null) status.firstScreenMs = performance.now() - t0;
      await new Promise((r) => setTimeout(r, 0)); // stay responsive between figures
    }
    if (io) io.disconnect();
    finishScheduled();
    status.allMs = performance.now() - t0;
    resolveAll();
  }

  main().catch(fail);
})();
