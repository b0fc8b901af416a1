// The archive browser's page (`GET /browse?feed=F&from=ISO&to=ISO`): pick a feed and a range
// (typed in the forms recctl takes; recd resolves them, in UTC), see the segments in it, listen
// from any point (the segment being written included), download the clip as FLAC or WAV with
// its proof, with progress, and open the range's loudness report. Plain HTML, CSS and
// JavaScript, nothing fetched from outside the box.
// Threads: none (a constant).

enum BrowseAssets {
    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <link rel="icon" href="data:,">
        <title>recd — archive</title>
        <style>
        :root { color-scheme: dark; --bg:#101418; --panel:#1a2027; --text:#e8edf2; --dim:#9aa7b4; --ok:#3fb950;
          --warn:#d29922; --bad:#f85149; --accent:#58a6ff; }
        * { box-sizing: border-box; }
        body { margin:0; background:var(--bg); color:var(--text); font:18px/1.4 system-ui, sans-serif; }
        nav { display:flex; gap:1.5em; padding:.6em 1.2em; background:var(--panel); border-bottom:1px solid #2d333b; }
        nav a { color:var(--dim); text-decoration:none; } nav a.here { color:var(--text); font-weight:600; }
        main { padding:1em 1.2em; display:grid; gap:1em; grid-template-columns: minmax(0,1fr) minmax(0,1fr); }
        section { background:var(--panel); border-radius:8px; padding:1em; }
        section.wide { grid-column: 1 / -1; }
        h1 { font-size:1.6em; margin:.2em 0 .4em; } h2 { font-size:1.2em; margin:0 0 .6em; color:var(--dim); }
        label { display:inline-block; margin:.2em 1em .4em 0; color:var(--dim); }
        input, select, button { font:inherit; background:#0d1117; color:var(--text); border:1px solid #30363d;
          border-radius:6px; padding:.35em .6em; }
        button { background:#238636; border-color:#2ea043; cursor:pointer; } button.secondary { background:#21262d; }
        .error { color:var(--bad); white-space:pre-wrap; } .dim { color:var(--dim); }
        #timeline { width:100%; height:70px; display:block; background:#0d1117; border-radius:6px; cursor:crosshair; }
        progress { width:100%; height:1.2em; }
        .axis { display:flex; justify-content:space-between; color:var(--dim); font-size:.85em; margin-top:.2em; }
        table { border-collapse:collapse; width:100%; font-variant-numeric: tabular-nums; }
        td, th { text-align:left; padding:.2em .6em; border-bottom:1px solid #2d333b; }
        audio { width:100%; margin-top:.5em; }
        @media (max-width: 1400px) { body { font-size:16px; } }
        </style>
        </head>
        <body>
        <nav><a href="/">Status</a><a href="/wall">Wall</a><a href="/day" id="daylink">Day</a>
        <a href="/browse" class="here">Archive</a><a href="/loudness" id="loudnav">Loudness</a>
        <span class="dim" style="margin-left:auto" id="clock"></span></nav>
        <main>
        <section class="wide">
          <h1>Archive</h1>
          <form id="pick">
            <label>Feed <select id="feed" name="feed"></select></label>
            <label>From <input id="from" name="from" size="24" value="-5m"></label>
            <label>To <input id="to" name="to" size="24" value="now"></label>
            <button type="submit" id="show">Show</button>
            <span class="dim">UTC; also now, -30s, -5m, -2h, today, yesterday, HH:MM, YYYY-MM-DD HH:MM</span>
          </form>
          <div id="rangeError" class="error"></div>
          <p id="resolved" class="dim"></p>
          <svg id="timeline" viewBox="0 0 1000 70" preserveAspectRatio="none"></svg>
          <div class="axis"><span id="axisFrom"></span><span id="axisMid"></span><span id="axisTo"></span></div>
          <p class="dim" id="segments"></p>
        </section>
        <section>
          <h2>Listen</h2>
          <label>From <input id="listenFrom" size="24"></label>
          <button type="button" id="listen">Play</button>
          <span class="dim">click the timeline to pick the point; plays up to 10 min, the newest audio included</span>
          <audio id="player" controls preload="none"></audio>
          <div id="listenError" class="error"></div>
        </section>
        <section>
          <h2>Download</h2>
          <label>Format <select id="format"><option value="flac">FLAC</option>
            <option value="wav">WAV</option></select></label>
          <label><input type="checkbox" id="proof" checked> with proof</label>
          <label title="C2PA: in the WAV file, signed with the box's archive key"><input type="checkbox"
            id="credentials"> with Content Credentials (WAV)</label>
          <button type="button" id="download">Download clip</button>
          <progress id="progress" max="1" value="0"></progress>
          <p id="progressText" class="dim"></p>
          <p><a id="proofLink" href="#" hidden>Download proof</a></p>
          <div id="downloadError" class="error"></div>
        </section>
        <section class="wide">
          <h2>Loudness of this range</h2>
          <p><a id="loudnessLink" href="/loudness">Open the loudness report</a> ·
             <a id="csvLink" href="#">CSV</a></p>
        </section>
        </main>
        <script>
        "use strict";
        const $ = (id) => document.getElementById(id);
        const params = new URLSearchParams(location.search);
        let range = null;
        function utc(d) { return d.toISOString().replace(/\\.\\d+Z$/, "Z").replace("T", " ").replace("Z", " UTC"); }
        function tick() { $("clock").textContent = utc(new Date()); }
        setInterval(tick, 1000); tick();
        function duration(s) {
          if (s < 60) return (Math.round(s * 10) / 10) + " s";
          if (s < 3600) return Math.floor(s / 60) + " min" + (s % 60 >= 1 ? " " + Math.floor(s % 60) + " s" : "");
          return Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min";
        }
        function query(extra) {
          const q = new URLSearchParams({ feed: $("feed").value, from: $("from").value, to: $("to").value });
          for (const [k, v] of Object.entries(extra || {})) q.set(k, v);
          return q.toString();
        }
        async function text(response) { return (await response.text()).trim(); }
        async function loadFeeds() {
          const wanted = params.get("feed");
          let feeds = [];
          try { feeds = (await (await fetch("/api/feeds")).json()).feeds; } catch (e) { feeds = []; }
          if (wanted && !feeds.includes(wanted)) feeds.unshift(wanted);
          for (const f of feeds) {
            const o = document.createElement("option"); o.value = o.textContent = f; $("feed").append(o);
          }
          if (wanted) $("feed").value = wanted;
          if (params.get("from")) $("from").value = params.get("from");
          if (params.get("to")) $("to").value = params.get("to");
          if ($("feed").value) show();
        }
        function drawTimeline() {
          const svg = $("timeline"); svg.innerHTML = "";
          for (const id of ["axisFrom", "axisMid", "axisTo"]) $(id).textContent = "";
          if (!range) return;
          const from = Date.parse(range.from), to = Date.parse(range.to), span = Math.max(1, to - from);
          const clock = (t) => new Date(t).toISOString().slice(11, 19);
          $("axisFrom").textContent = clock(from); $("axisMid").textContent = clock(from + span / 2);
          $("axisTo").textContent = clock(to) + " UTC";
          const ns = "http://www.w3.org/2000/svg";
          for (const seg of range.segments) {
            const a = Math.max(0, (Date.parse(seg.start) - from) / span);
            const b = Math.min(1, (Date.parse(seg.end) - from) / span);
            const r = document.createElementNS(ns, "rect");
            r.setAttribute("x", a * 1000); r.setAttribute("width", Math.max(1, (b - a) * 1000 - 1));
            r.setAttribute("y", 10); r.setAttribute("height", 50); r.setAttribute("fill", "#2f81f7");
            const t = document.createElementNS(ns, "title"); t.textContent = seg.start + " to " + seg.end; r.append(t);
            svg.append(r);
          }
        }
        async function show(event) {
          if (event) event.preventDefault();
          $("rangeError").textContent = "";
          history.replaceState(null, "", "/browse?" + query());
          const response = await fetch("/api/range?" + query());
          if (!response.ok) {
            range = null; drawTimeline(); $("rangeError").textContent = await text(response); return;
          }
          range = await response.json();
          $("resolved").textContent = range.feed + ": " + utc(new Date(range.from)) + " to " + utc(new Date(range.to))
            + " (" + duration(range.seconds) + ")";
          const count = range.segments.length;
          $("segments").textContent = count + " finished segment" + (count == 1 ? "" : "s")
            + " in this range; the one being written is included in listening and clips";
          $("listenFrom").value = range.from;
          const loud = "/loudness?" + new URLSearchParams({ feed: range.feed, from: range.from, to: range.to });
          $("loudnessLink").href = loud; $("loudnav").href = loud;
          $("csvLink").href = "/api/loudness?"
            + new URLSearchParams({ feed: range.feed, from: range.from, to: range.to, format: "csv" });
          drawTimeline();
        }
        $("pick").addEventListener("submit", show);
        $("timeline").addEventListener("click", (event) => {
          if (!range) return;
          const box = $("timeline").getBoundingClientRect();
          const from = Date.parse(range.from), to = Date.parse(range.to);
          const at = new Date(from + (to - from) * (event.clientX - box.left) / box.width);
          $("listenFrom").value = at.toISOString().replace(/\\.\\d+Z$/, "Z");
        });
        // The clip playing began here (ms since 1970; null when typed relative, e.g. -3s): a whole
        // 10 min clip that ends goes on with the next one, so listening is not cut at 10 min.
        let listeningFrom = null;
        function listen(from) {
          $("listenError").textContent = "";
          const url = "/api/listen?" + new URLSearchParams({ feed: $("feed").value, from });
          const absolute = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T/.test(from) && !isNaN(Date.parse(from));
          listeningFrom = absolute ? Date.parse(from) : null;
          // The clip is made once, for the player; only when it cannot play is recd asked why.
          $("player").onerror = async () => {
            const answer = await fetch(url);
            $("listenError").textContent = answer.ok ? "the browser cannot play this clip" : await text(answer);
          };
          $("player").src = url; $("player").play().catch(() => {});
        }
        $("listen").addEventListener("click", () => listen($("listenFrom").value || $("from").value));
        $("player").addEventListener("ended", () => {
          const played = $("player").duration;
          if (listeningFrom === null || !(played >= 599)) return;
          listen(new Date(listeningFrom + played * 1000).toISOString());
        });
        function newJob() {
          const bytes = new Uint8Array(12); crypto.getRandomValues(bytes);
          return "b" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
        }
        $("download").addEventListener("click", async () => {
          $("downloadError").textContent = ""; $("proofLink").hidden = true; $("progress").value = 0;
          $("progressText").textContent = "";  // the last clip's "done" is not this one's
          const job = newJob(), proof = $("proof").checked;
          const format = $("format").value;
          const credentials = $("credentials").checked && format == "wav" ? "yes" : "no";
          const url = "/api/export?" + query({ format, proof: proof ? "yes" : "no", credentials, job });
          $("download").disabled = true;
          // A HEAD first would make the clip twice: the download is the request; a refusal comes
          // back as the job's state and message.
          const a = document.createElement("a"); a.href = url; a.download = "";
          document.body.append(a); a.click(); a.remove();
          const started = Date.now();
          const poll = async () => {
            const response = await fetch("/api/export/progress?job=" + job);
            if (response.ok) {
              const p = await response.json();
              $("progress").value = p.fraction;
              $("progressText").textContent = (p.state == "running" ? "writing " : p.state + ": ") + p.file
                + (p.state == "running"
                   ? ", " + Math.round(p.fraction * 100) + " %, " + Math.round(p.bytes / 1024) + " KiB" : "")
                + " after " + duration((Date.now() - started) / 1000);
              if (p.state == "done") {
                $("progress").value = 1; $("download").disabled = false;
                if (p.proof) {
                  $("proofLink").href = "/api/export/proof?job=" + job; $("proofLink").download = p.file + ".proof";
                  $("proofLink").hidden = false;
                }
                return;
              }
              if (p.state == "failed") {
                $("download").disabled = false; $("progress").value = 0;
                $("downloadError").textContent = "the clip failed: " + p.message;
                return;
              }
            } else if (Date.now() - started > 10000) {
              $("download").disabled = false;
              $("downloadError").textContent = "the clip did not start: " + await text(response);
              return;
            }
            setTimeout(poll, 300);
          };
          setTimeout(poll, 200);
        });
        loadFeeds();
        </script>
        </body>
        </html>
        """
}
