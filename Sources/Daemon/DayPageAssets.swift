// The day view's one document (`GET /day?feed=F&date=YYYY-MM-DD`, or `&last=24h`): HTML, CSS
// and plain JavaScript on the browser's canvas, no build step, nothing fetched from outside the
// box. It reads `/api/day` once per day shown (and every minute for the last 24 h): the level
// overview (peak and RMS per second), the segments (with their gaps and network losses) and the
// journal, and draws them; a network loss is also a row of the event log. Zooming and
// the event log's filters are the browser's work alone. A range dragged on the timeline links to
// `/browse?feed=F&from=ISO&to=ISO`; "Proof report" to the day's printed proof (`/api/report`). Every value from recd is set with `textContent` or drawn,
// never parsed as HTML. A plain constant: any thread.

/// The day view's document, served as `text/html; charset=utf-8`.
enum DayPageAssets {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <link rel="icon" href="data:,">
        <title>recd — day of a feed</title>
        <style>
        :root { color-scheme: light dark; --bad: #c62828; --warn: #ef8f00; --gap: #b000b5; --net: #00a0a8; --info: #1e6fd9; }
        body { font: 15px/1.4 system-ui, sans-serif; margin: 0 1.2rem 1rem; }
        header { display: flex; flex-wrap: wrap; gap: .6rem 1rem; align-items: center; padding: .6rem 0; }
        h1 { font-size: 1.3rem; margin: 0 1rem 0 0; }
        nav a { margin-right: .8rem; }
        .controls { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; }
        button, select, input { font: inherit; padding: .15rem .5rem; }
        #clock { margin-left: auto; font-variant-numeric: tabular-nums; font-weight: 600; }
        #span { font-variant-numeric: tabular-nums; margin: .2rem 0; font-weight: 600; }
        #timeline { width: 100%; height: max(300px, 40vh); display: block; cursor: crosshair; border: 1px solid #8884; }
        #hover { min-height: 1.4em; font-variant-numeric: tabular-nums; color: #666; }
        #pickline { min-height: 1.6em; }
        .legend span { margin-right: 1rem; white-space: nowrap; }
        .legend i { display: inline-block; width: .9em; height: .9em; vertical-align: -.1em; margin-right: .3em; }
        #error { color: var(--bad); font-weight: 600; }
        table { border-collapse: collapse; width: 100%; margin-top: .4rem; }
        th, td { text-align: left; padding: .15rem .6rem; border-bottom: 1px solid #8883; }
        td.t { font-variant-numeric: tabular-nums; white-space: nowrap; }
        tbody tr { cursor: pointer; }
        tbody tr:hover { background: #8882; }
        #filters label { margin-right: .8rem; white-space: nowrap; }
        </style>
        </head>
        <body>
        <header>
          <h1>Day of a feed</h1>
          <nav><a href="/">Status</a><a href="/wall">Wall</a><a href="/browse">Archive</a></nav>
          <div class="controls">
            <label>Feed <select id="feed"></select></label>
            <label>Day (UTC) <input id="date" size="10" placeholder="YYYY-MM-DD" pattern="\d{4}-\d{2}-\d{2}"></label>
            <button id="last">Last 24 h</button>
            <button id="zoomout" title="Zoom out">−</button>
            <button id="zoomin" title="Zoom in">+</button>
            <button id="left" title="Earlier">◀</button>
            <button id="right" title="Later">▶</button>
            <button id="whole">Whole range</button>
            <a id="report" href="/api/report" target="_blank" title="The day's proof: a page to print and sign">Proof report</a>
          </div>
          <div id="clock"></div>
        </header>
        <div id="error"></div>
        <div id="span"></div>
        <canvas id="timeline"></canvas>
        <div id="hover"></div>
        <div id="pickline">Drag across the timeline to pick a range; the wheel zooms.</div>
        <div class="legend">
          <span><i style="background:#7fb2f0"></i>peak</span><span><i style="background:#1f5fb0"></i>RMS</span>
          <span><i style="background:var(--warn)"></i>silence</span><span><i style="background:var(--bad)"></i>stall / alarm</span>
          <span><i style="background:var(--gap)"></i>gap</span><span><i style="background:var(--net)"></i>network loss</span>
          <span><i style="background:var(--info)"></i>interruption</span>
          <span><i style="background:#888"></i>recd start/stop, not recorded</span><span>| segment boundary, loudness per segment (LUFS)</span>
        </div>
        <h2>What happened</h2>
        <div id="filters"></div>
        <table><thead><tr><th>Time (UTC)</th><th>Feed</th><th>Kind</th><th>What</th><th>How long</th></tr></thead>
        <tbody id="events"></tbody></table>
        <script>
        "use strict";
        const $ = (id) => document.getElementById(id);
        const params = new URLSearchParams(location.search);
        const state = { feed: params.get("feed") || "", date: params.get("date") || "", data: null,
          from: 0, to: 0, peak: null, rms: null, v0: 0, v1: 0, sel: null, drag: null, marks: [], hidden: new Set() };
        const pad = (n, w = 2) => String(n).padStart(w, "0");
        function hms(ms, seconds = true) {
          const d = new Date(ms);
          return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + (seconds ? ":" + pad(d.getUTCSeconds()) : "");
        }
        function day(ms) { const d = new Date(ms); return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()); }
        function iso(ms) { return new Date(Math.round(ms / 1000) * 1000).toISOString().replace(".000Z", "Z"); }
        function human(s) {
          if (s == null || !isFinite(s)) return "";
          if (s < 1) return Math.round(s * 1000) + " ms";
          if (s < 10) return (Math.round(s * 10) / 10) + " s";
          if (s < 60) return Math.round(s) + " s";
          const m = Math.round(s / 60);
          if (s < 3600) return m + " min";
          const h = Math.floor(m / 60), r = m % 60;
          return h + " h" + (r ? " " + r + " min" : "");
        }
        function tick() { $("clock").textContent = hms(Date.now()) + " UTC"; }
        setInterval(tick, 1000); tick();

        async function load() {
          const q = new URLSearchParams();
          if (state.feed) q.set("feed", state.feed);
          if (state.date) q.set("date", state.date); else q.set("last", "24h");
          let data;
          try {
            const r = await fetch("/api/day?" + q);
            if (!r.ok) throw new Error(await r.text());
            data = await r.json();
          } catch (e) { $("error").textContent = "Cannot load the day: " + e.message; return; }
          $("error").textContent = "";
          if (!state.feed && data.feeds.length) { state.feed = data.feeds[0]; return load(); }
          // A segment's network losses (its NETWORK_LOSS: the receiver played zeros) are events too.
          const losses = [];
          for (const seg of data.segments || [])
            for (const l of seg[7] || []) losses.push({ time: new Date(l[0]).toISOString(), feed: data.feed, kind: "network",
              text: "network loss of " + human(l[1] / 1000) + ": no packets came, the receiver played zeros", seconds: l[1] / 1000 });
          data.events = (data.events || []).concat(losses).sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
          // A zoomed view stays where it is when the last 24 h reload; the whole range follows.
          const keep = state.data && state.v1 > state.v0 && !(state.v0 === state.from && state.v1 === state.to);
          state.data = data;
          state.from = Date.parse(data.from); state.to = Date.parse(data.to);
          const n = Math.max(0, Math.ceil((state.to - state.from) / 1000));
          state.peak = new Uint8Array(n); state.rms = new Uint8Array(n);
          // Two bytes (peak, RMS code) per second from `from`, one base64 text.
          const codes = atob(data.levels || "");
          for (let i = 0; i < n && 2 * i + 1 < codes.length; i++) { state.peak[i] = codes.charCodeAt(2 * i); state.rms[i] = codes.charCodeAt(2 * i + 1); }
          if (!keep) { state.v0 = state.from; state.v1 = state.to; }
          const select = $("feed");
          select.replaceChildren(...[...new Set([...(data.feeds || []), state.feed].filter(Boolean))].map((f) => new Option(f, f)));
          select.value = state.feed;
          $("date").value = state.date;
          // The proof of the day shown (the last 24 h: today's, UTC).
          $("report").href = "/api/report?" + new URLSearchParams({ feed: state.feed, date: state.date || day(Date.now()) });
          buildMarks(); buildFilters(); drawEvents(); draw();
          if (!window.dayRenderMs) window.dayRenderMs = performance.now();
          document.body.dataset.ready = "yes";
        }

        function buildMarks() {
          const marks = [], events = state.data.events || [];
          const open = {};
          for (const e of events) {
            const t = Date.parse(e.time), s = (e.seconds || 0) * 1000;
            if (e.kind === "silence") open[e.feed] = t;
            if (e.kind === "sound") { marks.push({ kind: "silence", from: t - s, to: t, text: "silent for " + human(e.seconds) }); delete open[e.feed]; }
            else if (e.kind === "resumed" && e.seconds) marks.push({ kind: "stall", from: t - s, to: t, text: e.text });
            else if (e.kind === "gap") marks.push({ kind: "gap", from: t - s, to: t, text: e.text });
            else if (e.kind === "network") marks.push({ kind: "network", from: t, to: t + s, text: e.text });
            else if (e.kind !== "silence") marks.push({ kind: e.kind, from: t, to: t, text: e.text });
          }
          for (const f in open) marks.push({ kind: "silence", from: open[f], to: Math.min(Date.now(), state.to), text: "silent since " + hms(open[f]) + " UTC" });
          for (const seg of state.data.segments || [])
            for (const g of seg[6]) marks.push({ kind: "gap", from: g[0], to: g[0] + g[1], text: "gap of " + human(g[1] / 1000) });
          state.marks = marks;
        }
        const colours = { silence: "#ef8f00", stall: "#c62828", health: "#c62828", jack: "#c62828", gap: "#b000b5",
          network: "#00a0a8", interruption: "#1e6fd9", recd: "#888", recording: "#555", resumed: "#2a7d2a" };

        function x(ms, w) { return (ms - state.v0) / (state.v1 - state.v0) * w; }
        function draw() {
          const c = $("timeline"), dpr = window.devicePixelRatio || 1;
          const w = c.clientWidth, h = c.clientHeight;
          if (c.width !== Math.round(w * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
          const g = c.getContext("2d");
          g.setTransform(dpr, 0, 0, dpr, 0, 0);
          g.clearRect(0, 0, w, h);
          const dark = matchMedia("(prefers-color-scheme: dark)").matches, fg = dark ? "#ddd" : "#222";
          const axisH = 22, levelTop = axisH, levelH = h - axisH - 70, marksTop = levelTop + levelH + 4, segTop = marksTop + 34;
          const span = state.v1 - state.v0;
          $("span").textContent = day(state.v0) + " " + hms(state.v0) + " – " + (day(state.v1) !== day(state.v0) ? day(state.v1) + " " : "") + hms(state.v1) + " UTC (" + human(span / 1000) + " shown)";
          // Not recorded: grey; segments over it.
          g.fillStyle = dark ? "#333" : "#e4e4e4"; g.fillRect(0, levelTop, w, levelH);
          g.fillStyle = dark ? "#15181d" : "#fbfbfb";
          for (const seg of state.data.segments || []) {
            const a = x(seg[0], w), b = x(seg[1], w);
            if (b >= 0 && a <= w) g.fillRect(a, levelTop, Math.max(1, b - a), levelH);
          }
          // dB scale: -60..0 dBFS.
          const y = (code) => code === 0 ? 0 : Math.max(0, Math.min(1, (60 - (255 - code) / 2) / 60)) * levelH;
          const n = state.peak.length, perPx = span / 1000 / w;
          for (let px = 0; px < w; px++) {
            const s0 = Math.floor((state.v0 + px * perPx * 1000 - state.from) / 1000);
            const s1 = Math.max(s0 + 1, Math.floor((state.v0 + (px + 1) * perPx * 1000 - state.from) / 1000));
            let p = 0, r = 0;
            for (let s = Math.max(0, s0); s < Math.min(n, s1); s++) { if (state.peak[s] > p) p = state.peak[s]; if (state.rms[s] > r) r = state.rms[s]; }
            if (p) { g.fillStyle = "#7fb2f0"; g.fillRect(px, levelTop + levelH - y(p), 1, y(p)); }
            if (r) { g.fillStyle = "#1f5fb0"; g.fillRect(px, levelTop + levelH - y(r), 1, y(r)); }
          }
          g.strokeStyle = dark ? "#fff5" : "#fff9"; g.fillStyle = fg; g.font = "11px system-ui"; g.lineWidth = 1;
          for (const db of [0, -6, -12, -20, -40]) {
            const yy = levelTop + levelH - (60 + db) / 60 * levelH;
            g.beginPath(); g.moveTo(0, yy + .5); g.lineTo(w, yy + .5); g.stroke(); g.fillText(db + " dB", 3, yy + 11);
          }
          // Segments: boundaries and loudness.
          g.font = "11px system-ui";
          for (const seg of state.data.segments || []) {
            const a = x(seg[0], w), b = x(seg[1], w);
            if (b < 0 || a > w) continue;
            const l = seg[3];
            g.fillStyle = l == null ? "#8886" : l > -18 ? "#c62828aa" : l < -30 ? "#888a" : "#2a7d2aaa";
            g.fillRect(a, segTop, Math.max(1, b - a - 1), 16);
            if (b - a > 6) { g.fillStyle = fg; g.fillRect(a, segTop - 2, 1, 20); g.fillStyle = "#0003"; g.fillRect(a, levelTop, 1, levelH); }
            if (b - a > 70 && l != null) { g.fillStyle = "#fff"; g.fillText(l.toFixed(1) + " LUFS", Math.max(a, 0) + 3, segTop + 12); }
          }
          // Marks.
          for (const m of state.marks) {
            if (state.hidden.has(m.kind === "silence" ? "silence" : m.kind)) continue;
            const a = x(m.from, w), b = x(m.to, w);
            if (b < -2 || a > w + 2) continue;
            g.fillStyle = colours[m.kind] || "#555";
            g.fillRect(a, marksTop, Math.max(3, b - a), 26);
            if (m.kind === "silence" || m.kind === "gap" || m.kind === "stall" || m.kind === "network") { g.globalAlpha = .25; g.fillRect(a, levelTop, Math.max(2, b - a), levelH); g.globalAlpha = 1; }
          }
          // Time axis (UTC).
          const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200];
          const step = (steps.find((s) => s * 1000 / span * w >= 90) || 86400) * 1000;
          g.fillStyle = fg; g.font = "12px system-ui";
          for (let t = Math.ceil(state.v0 / step) * step; t <= state.v1; t += step) {
            const xx = x(t, w);
            g.fillRect(xx, axisH - 6, 1, 6);
            g.fillText(hms(t, step < 60000), xx + 2, 13);
          }
          g.fillText("UTC", w - 28, 13);
          if (state.sel) {
            const a = x(Math.min(...state.sel), w), b = x(Math.max(...state.sel), w);
            g.fillStyle = "#1e6fd933"; g.fillRect(a, axisH, b - a, h - axisH);
            g.strokeStyle = "#1e6fd9"; g.strokeRect(a + .5, axisH + .5, b - a, h - axisH - 1);
          }
        }

        function zoom(factor, at) {
          const span = state.v1 - state.v0, full = state.to - state.from;
          const next = Math.max(10000, Math.min(full, span * factor));
          const centre = at ?? (state.v0 + span / 2), frac = (centre - state.v0) / span;
          setView(centre - frac * next, centre - frac * next + next);
        }
        function setView(a, b) {
          const span = b - a;
          if (a < state.from) { a = state.from; b = a + span; }
          if (b > state.to) { b = state.to; a = Math.max(state.from, b - span); }
          state.v0 = a; state.v1 = b; draw();
        }
        function timeAt(ev) { const r = $("timeline").getBoundingClientRect(); return state.v0 + (ev.clientX - r.left) / r.width * (state.v1 - state.v0); }
        $("timeline").addEventListener("wheel", (ev) => { ev.preventDefault(); zoom(ev.deltaY < 0 ? 0.5 : 2, timeAt(ev)); }, { passive: false });
        $("timeline").addEventListener("mousedown", (ev) => { state.drag = [timeAt(ev), ev.clientX]; });
        $("timeline").addEventListener("mousemove", (ev) => {
          const t = timeAt(ev), s = Math.floor((t - state.from) / 1000);
          const lv = (c) => c ? ((255 - c) / -2).toFixed(1) + " dBFS" : "no sound";
          $("hover").textContent = day(t) + " " + hms(t) + " UTC — peak " + lv(state.peak[s]) + ", RMS " + lv(state.rms[s]);
          if (state.drag && Math.abs(ev.clientX - state.drag[1]) > 4) { state.sel = [state.drag[0], t]; draw(); }
        });
        window.addEventListener("mouseup", (ev) => {
          if (!state.drag) return;
          const moved = Math.abs(ev.clientX - state.drag[1]) > 4;
          state.drag = null;
          if (moved && state.sel) pick(Math.min(...state.sel), Math.max(...state.sel));
        });
        function pick(a, b) {
          state.sel = [a, b]; draw();
          const link = document.createElement("a");
          link.id = "pick";
          link.href = "/browse?" + new URLSearchParams({ feed: state.feed, from: iso(a), to: iso(b) });
          link.textContent = "Open " + hms(a) + " – " + hms(b) + " UTC (" + human((b - a) / 1000) + ") in the archive browser";
          const zoomTo = document.createElement("button");
          zoomTo.textContent = "Zoom to it"; zoomTo.onclick = () => setView(a, b);
          $("pickline").replaceChildren(link, " ", zoomTo);
        }
        $("zoomin").onclick = () => zoom(0.25);
        $("zoomout").onclick = () => zoom(4);
        $("left").onclick = () => setView(state.v0 - (state.v1 - state.v0) / 2, state.v1 - (state.v1 - state.v0) / 2);
        $("right").onclick = () => setView(state.v0 + (state.v1 - state.v0) / 2, state.v1 + (state.v1 - state.v0) / 2);
        $("whole").onclick = () => setView(state.from, state.to);
        $("last").onclick = () => { state.date = ""; navigate(); };
        $("date").onchange = () => {
          if (!/^\d{4}-\d{2}-\d{2}$/.test($("date").value)) { $("error").textContent = "Write the day as YYYY-MM-DD (UTC)."; return; }
          state.date = $("date").value; navigate();
        };
        $("feed").onchange = () => { state.feed = $("feed").value; navigate(); };
        function navigate() {
          const q = new URLSearchParams({ feed: state.feed });
          if (state.date) q.set("date", state.date);
          history.replaceState(null, "", "/day?" + q);
          state.data = null; load();
        }

        function buildFilters() {
          const kinds = [...new Set((state.data.events || []).map((e) => e.kind))].sort();
          const box = $("filters");
          box.replaceChildren(...kinds.map((k) => {
            const label = document.createElement("label"), input = document.createElement("input");
            input.type = "checkbox"; input.checked = !state.hidden.has(k); input.dataset.kind = k;
            input.onchange = () => { input.checked ? state.hidden.delete(k) : state.hidden.add(k); drawEvents(); draw(); };
            label.append(input, " " + k); return label;
          }));
          const text = document.createElement("input");
          text.id = "textfilter"; text.placeholder = "filter text"; text.value = state.text || "";
          text.oninput = () => { state.text = text.value; drawEvents(); };
          box.append(text);
        }
        function drawEvents() {
          const needle = (state.text || "").toLowerCase();
          const rows = (state.data.events || []).filter((e) => !state.hidden.has(e.kind) &&
            (!needle || (e.text + " " + e.kind + " " + (e.feed || "")).toLowerCase().includes(needle)));
          $("events").replaceChildren(...rows.slice(-1000).reverse().map((e) => {
            const tr = document.createElement("tr"), t = Date.parse(e.time);
            tr.dataset.kind = e.kind;
            // A silence's length is on the "sound" entry that ends it; "silence" carries the alarm's delay.
            for (const v of [day(t) + " " + hms(t), e.feed || "the box", e.kind, e.text, e.kind === "silence" ? "" : human(e.seconds)]) {
              const td = document.createElement("td"); td.textContent = v; tr.append(td);
            }
            tr.firstChild.className = "t";
            tr.onclick = () => setView(t - 300000, t + 300000);
            return tr;
          }));
        }
        window.addEventListener("resize", () => state.data && draw());
        setInterval(() => { if (!state.date && state.data) load(); }, 60000);
        window.dayView = { state, setView, zoom, pick };
        load();
        </script>
        </body>
        </html>
        """#
}
