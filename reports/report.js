// hscc-trace report loader: unpacks the inlined plotly.js and each figure's data (gzip, base64),
// draws every figure and links the time axes of the figures of one flow (zoom one, all follow).
// No network: everything is in this file; the page's Content-Security-Policy forbids requests.
// Figures near the viewport are drawn first, the rest in document order in the background, so
// the first screen is ready quickly even when a report holds many flows.
"use strict";
(function () {
  const t0 = performance.now();
  const status = (window.hsccStatus = {
    expected: 0, rendered: 0, done: false, error: null, ms: null, firstScreenMs: null, steps: [],
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

  // --- linked time axes: one group per flow -----------------------------------------------------
  const groups = new Map(); // section id -> {divs: [], range: null | [a, b]}
  function group(id) {
    if (!groups.has(id)) groups.set(id, { divs: [], range: null, busy: false });
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

  function attach(g, div) {
    g.divs.push(div);
    div.on("plotly_relayout", (ev) => {
      if (g.busy) return;
      let upd = null;
      for (const k of Object.keys(ev)) {
        const m = /^xaxis\d*\.range\[([01])\]$/.exec(k);
        if (m) {
          upd = upd || {};
          upd["xaxis.range[" + m[1] + "]"] = ev[k];
        } else if (/^xaxis\d*\.range$/.test(k)) upd = { "xaxis.range": ev[k] };
        else if (/^xaxis\d*\.autorange$/.test(k) && ev[k]) upd = { "xaxis.autorange": true };
      }
      if (!upd) return;
      const xr = div.layout.xaxis && div.layout.xaxis.range;
      g.range = upd["xaxis.autorange"] ? null : xr ? xr.slice() : null;
      const userY = Object.keys(ev).some((k) => /^yaxis\d*\.range/.test(k)); // a box zoom chose y itself
      g.busy = true;
      const adjust = (o) => (g.range ? fitY(o, g.range) : resetY(o));
      Promise.all(g.divs.map((o) => (o === div ? (userY ? null : adjust(o))
                                              : Plotly.relayout(o, upd).then(() => adjust(o)))))
        .finally(() => { g.busy = false; });
    });
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
          Plotly.restyle(div, { visible: hidden(div.data[i]) ? true : false }, idx);
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
      f.layout.template = template;
      if (g.range) f.layout.xaxis = Object.assign({}, f.layout.xaxis || {}, { range: g.range.slice(), autorange: false });
      const td = performance.now();
      const refreshLegend = buildLegends(job.div, f);
      await Plotly.newPlot(job.div, f.data, f.layout, config);
      refreshLegend();
      if (g.range) await fitY(job.div, g.range);
      step(job.div.dataset.panel, td);
      job.div.style.minHeight = "";
      attach(g, job.div);
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
