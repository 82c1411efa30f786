// hscc-trace report loader: unpacks the inlined plotly.js and each flow's figures (gzip, base64),
// draws them in order and links the time axes of every figure of a flow (zoom one, all follow).
// No network: everything is in this file; the page's Content-Security-Policy forbids requests.
"use strict";
(function () {
  const t0 = performance.now();
  const status = (window.hsccStatus = { expected: 0, rendered: 0, done: false, error: null, ms: null, steps: [] });
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

  // Zooming or panning the time axis of one figure applies the same range to its siblings.
  function linkAxes(divs) {
    let busy = false;
    for (const d of divs) {
      d.on("plotly_relayout", (ev) => {
        if (busy) return;
        let upd = null;
        for (const k of Object.keys(ev)) {
          const m = /^xaxis\d*\.range\[([01])\]$/.exec(k);
          if (m) { upd = upd || {}; upd["xaxis.range[" + m[1] + "]"] = ev[k]; }
          else if (/^xaxis\d*\.range$/.test(k)) upd = { "xaxis.range": ev[k] };
          else if (/^xaxis\d*\.autorange$/.test(k) && ev[k]) upd = { "xaxis.autorange": true };
        }
        if (!upd) return;
        busy = true;
        Promise.all(divs.filter((o) => o !== d).map((o) => Plotly.relayout(o, upd))).finally(() => { busy = false; });
      });
    }
  }

  async function main() {
    const template = JSON.parse(document.getElementById("plotly-template").textContent);
    const config = JSON.parse(document.getElementById("plotly-config").textContent);
    const payloads = Array.from(document.querySelectorAll("script[data-flow-payload]"));
    status.expected = Number(document.body.dataset.figures || 0);
    if (!payloads.length) { status.done = true; status.ms = performance.now() - t0; return; }
    if (typeof DecompressionStream === "undefined") throw new Error("this browser lacks DecompressionStream (needs Chrome/Edge 80+, Firefox 113+, Safari 16.4+)");
    let t = performance.now();
    const js = await gunzip("plotlyjs");
    step("unpack plotly.js", t);
    t = performance.now();
    const s = document.createElement("script");
    s.textContent = js;
    document.head.appendChild(s);
    step("load plotly.js", t);
    if (!window.Plotly) throw new Error("plotly.js did not load");
    // Flows are drawn one after another, yielding between figures so the page stays responsive;
    // a flow section that comes into view (scrolling, a link from the flow table) jumps the queue.
    const queue = payloads.slice();
    const bySection = new Map(payloads.map((p) => [p.dataset.section, p]));
    if ("IntersectionObserver" in window) {
      const io = new IntersectionObserver((entries) => {
        for (const en of entries) {
          const p = bySection.get(en.target.id);
          const i = queue.indexOf(p);
          if (en.isIntersecting && i > 0) { queue.splice(i, 1); queue.unshift(p); }
        }
      }, { rootMargin: "800px 0px" });
      for (const id of bySection.keys()) { const el = document.getElementById(id); if (el) io.observe(el); }
    }
    while (queue.length) {
      const p = queue.shift();
      t = performance.now();
      const figs = JSON.parse(await gunzip(p.id));
      step("unpack " + p.id, t);
      const divs = [];
      for (const f of figs) {
        const div = document.getElementById(f.div);
        f.layout.template = template;
        t = performance.now();
        await Plotly.newPlot(div, f.data, f.layout, config);
        step(div.dataset.panel, t);
        div.style.minHeight = "";
        divs.push(div);
        status.rendered++;
        await new Promise((r) => setTimeout(r, 0));
      }
      linkAxes(divs);
      if (status.firstFlowMs == null) status.firstFlowMs = performance.now();
    }
    status.ms = performance.now() - t0;
    status.sinceNavigation = performance.now();
    status.done = true;
    document.documentElement.dataset.rendered = "true";
    const note = document.getElementById("render-time");
    if (note) note.textContent = "figures drawn in " + (status.ms / 1000).toFixed(2) + " s";
  }

  main().catch(fail);
})();
