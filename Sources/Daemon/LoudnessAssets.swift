// The loudness compliance page (`GET /loudness?feed=F&date=YYYY-MM-DD` or `&from=&to=`): a
// day's or a range's integrated loudness, loudness range, maximum true peak and time above the
// target, with the short-term loudness plotted against the target and its tolerance (canvas),
// and the CSV `/api/loudness` gives. Plain HTML, CSS and JavaScript, nothing from outside.
// Threads: none (a constant).

enum LoudnessAssets {
    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <link rel="icon" href="data:,">
        <title>recd — loudness</title>
        <style>
        :root { color-scheme: dark; --bg:#101418; --panel:#1a2027; --text:#e8edf2; --dim:#9aa7b4; --ok:#3fb950;
          --bad:#f85149; }
        * { box-sizing: border-box; }
        body { margin:0; background:var(--bg); color:var(--text); font:18px/1.4 system-ui, sans-serif; }
        nav { display:flex; gap:1.5em; padding:.6em 1.2em; background:var(--panel); border-bottom:1px solid #2d333b; }
        nav a { color:var(--dim); text-decoration:none; } nav a.here { color:var(--text); font-weight:600; }
        main { padding:1em 1.2em; display:grid; gap:1em; }
        section { background:var(--panel); border-radius:8px; padding:1em; }
        h1 { font-size:1.6em; margin:.2em 0 .4em; }
        label { display:inline-block; margin:.2em 1em .4em 0; color:var(--dim); }
        input, select, button { font:inherit; background:#0d1117; color:var(--text); border:1px solid #30363d;
          border-radius:6px; padding:.35em .6em; }
        button { background:#238636; border-color:#2ea043; cursor:pointer; }
        .error { color:var(--bad); white-space:pre-wrap; } .dim { color:var(--dim); }
        .figures { display:grid; grid-template-columns: repeat(5, minmax(0, 1fr)); gap:1em; }
        .figure { background:#0d1117; border-radius:6px; padding:.6em .8em; }
        .figure b { display:block; font-size:2em; font-variant-numeric: tabular-nums; }
        .over b { color:var(--bad); } .within b { color:var(--ok); }
        canvas { width:100%; height:360px; display:block; background:#0d1117; border-radius:6px; }
        @media (max-width: 1400px) { body { font-size:16px; } canvas { height:260px; } .figure b { font-size:1.5em; } }
        </style>
        </head>
        <body>
        <nav><a href="/">Status</a><a href="/wall">Wall</a><a href="/day">Day</a>
        <a href="/browse" id="browselink">Archive</a>
        <a href="/loudness" class="here">Loudness</a><span class="dim" style="margin-left:auto" id="clock"></span></nav>
        <main>
        <section>
          <h1>Loudness compliance</h1>
          <form id="pick">
            <label>Feed <select id="feed"></select></label>
            <label>Day <input id="date" size="11" placeholder="YYYY-MM-DD"></label>
            <label>or from <input id="from" size="22"></label><label>to <input id="to" size="22"></label>
            <label>Target <input id="target" size="5"> LUFS</label><label>± <input id="tolerance" size="4"> LU</label>
            <button type="submit" id="measure">Measure</button>
          </form>
          <div id="error" class="error"></div>
          <p id="what" class="dim"></p>
        </section>
        <section class="figures" id="figures">
          <div class="figure" id="fI">Integrated<b id="integrated">–</b><span class="dim">LUFS</span></div>
          <div class="figure">Loudness range<b id="lra">–</b><span class="dim">LU</span></div>
          <div class="figure" id="fP">Max true peak<b id="peak">–</b><span class="dim">dBTP</span></div>
          <div class="figure" id="fA">Above target<b id="above">–</b>
            <span class="dim" id="aboveNote">short-term</span></div>
          <div class="figure">Measured<b id="seconds">–</b><span class="dim"><a id="csv" href="#">CSV</a></span></div>
        </section>
        <section><canvas id="plot" width="1800" height="360"></canvas>
          <p class="dim">Short-term loudness (3 s) each second, UTC; the green band is the target ± tolerance.</p>
        </section>
        </main>
        <script>
        "use strict";
        const $ = (id) => document.getElementById(id);
        const params = new URLSearchParams(location.search);
        let report = null;
        function utc(d) { return d.toISOString().replace(/\\.\\d+Z$/, "Z").replace("T", " ").replace("Z", " UTC"); }
        const tick = () => { $("clock").textContent = utc(new Date()); };
        setInterval(tick, 1000); tick();
        function duration(s) {
          if (s < 60) return (Math.round(s * 10) / 10) + " s";
          if (s < 3600) return Math.floor(s / 60) + " min" + (s % 60 >= 1 ? " " + Math.floor(s % 60) + " s" : "");
          return Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min";
        }
        function fixed(v) { return v === null ? "–" : v.toFixed(1); }
        function query(format) {
          const q = new URLSearchParams({ feed: $("feed").value });
          if ($("from").value) { q.set("from", $("from").value); q.set("to", $("to").value || "now"); }
          else q.set("date", $("date").value || new Date().toISOString().slice(0, 10));
          if ($("target").value) q.set("target", $("target").value);
          if ($("tolerance").value) q.set("tolerance", $("tolerance").value);
          if (format) q.set("format", format);
          return q;
        }
        async function measure(event) {
          if (event) event.preventDefault();
          $("error").textContent = ""; $("what").textContent = "measuring…";
          const q = query(); history.replaceState(null, "", "/loudness?" + q);
          $("csv").href = "/api/loudness?" + query("csv");
          const response = await fetch("/api/loudness?" + q);
          if (!response.ok) {
            $("what").textContent = ""; $("error").textContent = (await response.text()).trim(); return;
          }
          report = await response.json();
          $("target").value = report.targetLUFS; $("tolerance").value = report.toleranceLU;
          $("what").textContent = report.feed + " from " + utc(new Date(report.from)) + ", " + duration(report.seconds)
            + "; target " + report.targetLUFS + " LUFS ± " + report.toleranceLU + " LU";
          $("integrated").textContent = fixed(report.integratedLUFS);
          $("lra").textContent = fixed(report.rangeLU);
          $("peak").textContent = fixed(report.truePeakDBTP);
          $("above").textContent = duration(report.secondsAbove);
          $("seconds").textContent = duration(report.seconds);
          const off = report.integratedLUFS !== null
            && Math.abs(report.integratedLUFS - report.targetLUFS) > report.toleranceLU;
          $("fI").className = "figure " + (report.integratedLUFS === null ? "" : off ? "over" : "within");
          $("fA").className = "figure " + (report.secondsAbove > 0 ? "over" : "within");
          draw();
        }
        function draw() {
          const canvas = $("plot"), box = canvas.getBoundingClientRect();
          canvas.width = Math.round(box.width * devicePixelRatio);
          canvas.height = Math.round(box.height * devicePixelRatio);
          const g = canvas.getContext("2d"), w = canvas.width, h = canvas.height, s = devicePixelRatio;
          g.clearRect(0, 0, w, h);
          if (!report) return;
          const left = 60 * s, bottom = h - 28 * s, top = 10 * s, right = w - 10 * s;
          const lo = -60, hi = 0, y = (v) => bottom - (Math.max(lo, Math.min(hi, v)) - lo) / (hi - lo) * (bottom - top);
          g.font = (13 * s) + "px system-ui"; g.fillStyle = "#9aa7b4"; g.strokeStyle = "#2d333b";
          for (let v = lo; v <= hi; v += 10) { g.beginPath(); g.moveTo(left, y(v)); g.lineTo(right, y(v)); g.stroke();
            g.fillText(v + " LUFS", 4 * s, y(v) + 4 * s); }
          g.fillStyle = "rgba(63,185,80,0.18)";
          g.fillRect(left, y(report.targetLUFS + report.toleranceLU), right - left,
                     y(report.targetLUFS - report.toleranceLU) - y(report.targetLUFS + report.toleranceLU));
          g.strokeStyle = "#3fb950"; g.beginPath();
          g.moveTo(left, y(report.targetLUFS)); g.lineTo(right, y(report.targetLUFS)); g.stroke();
          const n = report.shortTermLUFS.length, from = Date.parse(report.from);
          const x = (i) => left + (right - left) * (i + 1) / Math.max(1, n);
          g.fillStyle = "#9aa7b4";
          for (let k = 0; k <= 6; k++) { const i = Math.round((n - 1) * k / 6); if (n == 0) break;
            const label = new Date(from + (i + 1) * 1000).toISOString().slice(11, 19);
            g.fillText(label, Math.min(x(i) - 24 * s, right - 60 * s), h - 8 * s); }
          // Each pixel column: the highest short-term reading in it (a day is 86,400 points).
          const columns = Math.max(1, Math.floor(right - left)), step = n / columns;
          let last = null;
          g.lineWidth = 2 * s;
          for (let c = 0; c < columns && n > 0; c++) {
            let best = null;
            const first = Math.floor(c * step), end = Math.min(n, Math.max(first + 1, Math.floor((c + 1) * step)));
            for (let i = first; i < end; i++) {
              const v = report.shortTermLUFS[i]; if (v !== null && (best === null || v > best)) best = v; }
            if (best === null) { last = null; continue; }
            g.strokeStyle = best > report.targetLUFS + report.toleranceLU ? "#f85149" : "#58a6ff";
            const px = left + c, py = y(best);
            g.beginPath(); g.moveTo(last ? last[0] : px, last ? last[1] : py); g.lineTo(px + 1, py); g.stroke();
            last = [px + 1, py];
          }
        }
        window.addEventListener("resize", draw);
        (async () => {
          let feeds = [];
          try { feeds = (await (await fetch("/api/feeds")).json()).feeds; } catch (e) { feeds = []; }
          const wanted = params.get("feed");
          if (wanted && !feeds.includes(wanted)) feeds.unshift(wanted);
          for (const f of feeds) {
            const o = document.createElement("option"); o.value = o.textContent = f; $("feed").append(o);
          }
          if (wanted) $("feed").value = wanted;
          for (const k of ["date", "from", "to", "target", "tolerance"]) if (params.get(k)) $(k).value = params.get(k);
          if (!$("date").value && !$("from").value) $("date").value = new Date().toISOString().slice(0, 10);
          $("browselink").href = "/browse?"
            + new URLSearchParams({ feed: $("feed").value, from: $("from").value || "-5m",
            to: $("to").value || "now" });
          $("pick").addEventListener("submit", measure);
          if ($("feed").value) measure();
        })();
        </script>
        </body>
        </html>
        """
}
