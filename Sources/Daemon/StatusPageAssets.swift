// The status page's one document (`GET /`): HTML, CSS and plain JavaScript, no build step,
// nothing fetched from outside the box. It reads `/api/status` (every second), `/api/segments`
// (every 5 s) and the meters' server-sent events (`/events`), and plays segments from
// `/archive/...`. Its watchdog is the wall screen's (`WallPageAssets.sharedScript`): no answer
// from recd for 3 s turns the whole page into an alarm that says since when, every stale value
// greyed. Times are UTC, 24-hour. Every value from recd is set with `textContent`, never parsed
// as HTML.
// A plain constant: any thread.

/// The status page's document, served as `text/html; charset=utf-8`.
enum StatusPageAssets {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <link rel="icon" href="data:,">
        <title>recd</title>
        <style>
        :root { color-scheme: light dark; --ok: #2a7d2a; --bad: #b3261e; --warn: #a66a00; --bar: #3b7dd8; }
        body { font: 14px/1.4 system-ui, sans-serif; margin: 1rem 2rem; }
        h1 { font-size: 1.4rem; margin: 0 0 .2rem; }
        h2 { font-size: 1.1rem; margin: 1.4rem 0 .4rem; border-bottom: 1px solid #8884; }
        table { border-collapse: collapse; }
        th, td { text-align: left; padding: .15rem .8rem .15rem 0; vertical-align: middle; }
        th { font-weight: 600; }
        .ok { color: var(--ok); } .bad { color: var(--bad); } .warn { color: var(--warn); }
        .muted { opacity: .65; }
        .meter { display: grid; grid-template-columns: 12rem 20rem 5rem; gap: .6rem; align-items: center; }
        .bar { height: .7rem; background: #8883; position: relative; }
        .bar > div { position: absolute; inset: 0 auto 0 0; background: var(--bar); width: 0; }
        .meter .value { font-variant-numeric: tabular-nums; text-align: right; }
        audio { height: 2rem; vertical-align: middle; }
        #connection { float: right; font-variant-numeric: tabular-nums; }
        nav { display: flex; gap: 1.2rem; margin: 0 0 .6rem; font-weight: 600; }
        nav a { color: inherit; }
        #health { padding: .5rem .8rem; margin: .4rem 0 .2rem; font-weight: 600; border-radius: .3rem;
                  background: #6b7280; color: #fff; }
        #health[data-state=ok] { background: var(--ok); }
        #health[data-state=warning] { background: #e0a100; color: #111; }
        #health[data-state=alarm] { background: var(--bad); }
        /* recd unreachable: the whole page says so, and every old value is greyed. */
        #stale { display: none; position: sticky; top: 0; margin: -1rem -2rem 1rem; padding: 1rem 2rem; background: var(--bad);
                 color: #fff; font-size: 1.6rem; font-weight: 700; z-index: 10; }
        body.stale #stale { display: block; }
        body.stale { background: #3a1214; }
        body.stale main { filter: grayscale(1); opacity: .35; }
        </style>
        </head>
        <body>
        <div id="stale" role="alert"></div>
        <main>
        <nav><a href="./">status</a><a href="wall">wall</a><a href="day">day</a><a href="browse">archive</a><a href="loudness">loudness</a></nav>
        <span id="connection" class="muted">connecting…</span>
        <h1>recd <span id="version" class="muted"></span></h1>
        <div id="health" data-state="unknown">health unknown</div>
        <div id="daemon" class="muted"></div>

        <h2>JACK</h2>
        <div id="jack">…</div>

        <h2>Sessions and routes</h2>
        <table id="sessions"><thead><tr><th>app</th><th>category</th><th>state</th><th>inputs</th><th>outputs</th></tr></thead><tbody></tbody></table>
        <h3>Ports</h3>
        <table id="ports"><thead><tr><th>port</th><th>type</th><th>direction</th><th>available</th><th>JACK</th></tr></thead><tbody></tbody></table>

        <h2>Recorders</h2>
        <table id="recorders"><thead><tr><th>app</th><th>stream</th><th>port</th><th>recorded</th><th>segments</th><th>overruns</th><th>silence</th></tr></thead><tbody></tbody></table>

        <h2>Meters <span id="meter-state" class="muted"></span></h2>
        <div id="meters"></div>

        <h2>Recent segments</h2>
        <div id="archive" class="muted"></div>
        <table id="segments"><thead><tr><th>start (UTC)</th><th>app</th><th>stream</th><th>length</th><th>loudness</th><th>play</th></tr></thead><tbody></tbody></table>

        </main>
        <script>
        "use strict";
        \#(WallPageAssets.sharedScript)
        const $ = (id) => document.getElementById(id);
        function cell(row, text, cls) {
          const td = row.insertCell();
          td.textContent = text == null ? "" : String(text);
          if (cls) td.className = cls;
          return td;
        }
        function fill(id, rows, render) {
          const body = $(id).tBodies[0];
          body.replaceChildren();
          for (const item of rows) render(body.insertRow(), item);
          if (rows.length === 0) cell(body.insertRow(), "none", "muted");
        }
        function seconds(s) {
          s = Math.round(s || 0);
          const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
          return (h ? h + " h " : "") + (h || m ? m + " min " : "") + (s % 60) + " s";
        }
        function bytes(n) {
          if (n == null) return "?";
          const units = ["B", "kB", "MB", "GB", "TB"];
          let i = 0;
          while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
          return n.toFixed(i ? 1 : 0) + " " + units[i];
        }

        function renderStatus(data) {
          const s = data.status, routes = data.routes;
          $("version").textContent = s.daemon.version;
          $("daemon").textContent = "pid " + s.daemon.pid + " · up " + seconds(s.daemon.uptime) +
            " · config " + s.daemon.config;
          const h = s.health;
          $("health").dataset.state = h ? h.state : "unknown";
          $("health").textContent = h ? h.state.toUpperCase() + (h.reasons.length ? ": " +
            h.reasons.map((r) => r.text).join("; ") : "") + (h.since ? " (since " + utcTime(new Date(h.since)) + ")" : "")
            : "health unknown: this recd reports none";
          const j = s.jack, jack = $("jack");
          jack.replaceChildren();
          const state = document.createElement("span");
          state.id = "jack-state";
          state.className = j.connected && !j.stalledSince ? "ok" : "bad";
          state.textContent = !j.connected ? "disconnected" : j.stalledSince
            ? "STALLED for " + lasted((Date.now() - Date.parse(j.stalledSince)) / 1000) + " (no process cycle since " +
              utcTime(new Date(j.stalledSince)) + ")" : "connected";
          jack.append(state, " " + (j.connected
            ? "to " + (j.server || "default") + " (" + (j.implementation || "jack") + ") as " + j.client +
              " · " + j.sampleRate + " Hz · " + j.bufferSize + " frames · xruns " + j.xruns
            : (j.error || "")));
          fill("sessions", s.sessions, (row, x) => {
            cell(row, x.app); cell(row, x.category);
            cell(row, x.state, x.state === "active" ? "ok" : x.state === "interrupted" ? "warn" : "muted");
            cell(row, (x.route.inputs || []).join(", ")); cell(row, (x.route.outputs || []).join(", "));
          });
          fill("ports", routes.ports, (row, p) => {
            cell(row, p.name); cell(row, p.type); cell(row, p.direction);
            cell(row, p.available ? "yes" : "no", p.available ? "ok" : "bad"); cell(row, p.jack.join(", "));
          });
          fill("recorders", s.recorders, (row, r) => {
            cell(row, r.app); cell(row, r.stream); cell(row, r.port); cell(row, seconds(r.seconds));
            cell(row, r.segments); cell(row, r.overruns, r.overruns ? "warn" : "");
            const silent = r.silentSince, stalled = r.stalledSince;
            const words = (t) => " for " + lasted((Date.now() - Date.parse(t)) / 1000) + " (since " +
              utcTime(new Date(t)) + ")";
            const text = stalled ? "STALLED" + words(stalled) : silent ? "silent" + words(silent) : "sound";
            const td = cell(row, text, silent || stalled ? "bad silence" : "ok silence");
            td.dataset.silent = silent ? "yes" : "no";
            td.dataset.stalled = stalled ? "yes" : "no";
          });
          const a = s.archive;
          $("archive").textContent = a.dir + (a.freeBytes != null
            ? " · " + bytes(a.freeBytes) + " free (" + a.freePercent + " %) · " + (a.segments ?? "?") + " segments" : "");
        }

        // One row per channel, kept across updates so the bars move instead of being rebuilt.
        const meterRows = new Map();
        function renderMeters(data) {
          const box = $("meters");
          for (const m of data.meters) {
            const key = m.group + "\u0000" + m.channel + "\u0000" + m.direction;
            let row = meterRows.get(key);
            if (!row) {
              row = document.createElement("div");
              row.className = "meter";
              row.dataset.direction = m.direction;
              const label = document.createElement("span");
              label.textContent = m.name + " (" + m.direction + ")";
              const bar = document.createElement("div");
              bar.className = "bar";
              bar.append(document.createElement("div"));
              const value = document.createElement("span");
              value.className = "value";
              row.append(label, bar, value);
              box.append(row);
              meterRows.set(key, row);
            }
            const peak = Math.max(-120, m.peakDB);
            row.dataset.peak = String(peak);
            row.children[1].firstChild.style.width = Math.max(0, Math.min(100, (peak + 60) / 60 * 100)) + "%";
            row.children[2].textContent = peak <= -120 ? "-∞" : peak.toFixed(1) + " dB";
          }
          $("meter-state").textContent = "live, every " + Math.round(data.windowMs) + " ms";
        }

        let shownSegments = "";
        function renderSegments(data) {
          const key = data.segments.map((x) => x.file).join("\n");
          if (key === shownSegments) return;  // players keep their position
          shownSegments = key;
          // A segment still listed keeps its player: a new segment landing every few seconds
          // must not stop one being heard (a media element taken out of the page pauses).
          const players = new Map(Array.from($("segments").querySelectorAll("tr[data-file]"))
            .map((r) => [r.dataset.file, r.querySelector("audio")]));
          fill("segments", data.segments, (row, x) => {
            row.dataset.file = x.file;
            row.dataset.seconds = String(x.seconds);
            cell(row, x.start.replace("T", " ").replace("Z", "")); cell(row, x.app); cell(row, x.stream);
            cell(row, seconds(x.seconds));
            cell(row, x.loudnessLufs == null ? "" : x.loudnessLufs.toFixed(1) + " LUFS");
            let audio = players.get(x.file);
            if (!audio) {
              audio = document.createElement("audio");
              audio.controls = true;
              audio.preload = "none";
              audio.src = x.url;
            }
            row.insertCell().append(audio);
          });
        }

        async function poll(url, render, every) {
          for (;;) {
            try {
              // A recd that hangs must not hold the fetch for ever: the watchdog judges answers.
              const reply = await fetch(url, { cache: "no-store", signal: AbortSignal.timeout(2000) });
              if (reply.ok) {
                render(await reply.json());
                if (url === "api/status") watchdog.fresh();
                $("connection").textContent = "updated " + utcTime(new Date());
                $("connection").className = "muted";
              } else {
                $("connection").textContent = url + ": HTTP " + reply.status;
                $("connection").className = "bad";
              }
            } catch (error) {
              $("connection").textContent = "recd unreachable";
              $("connection").className = "bad";
            }
            await new Promise((resolve) => setTimeout(resolve, every));
          }
        }

        poll("api/status", renderStatus, 1000);
        poll("api/segments", renderSegments, 5000);
        const events = new EventSource("events");
        events.addEventListener("meters", (e) => renderMeters(JSON.parse(e.data)));
        events.onerror = () => { $("meter-state").textContent = "reconnecting…"; };
        const watchdog = new Watchdog((since) => {
          if (since) $("stale").textContent = "ALARM: recd unreachable since " + utcTime(since) + " (no update for " +
            lasted((Date.now() - since) / 1000) + "): every value below is old";
        });
        </script>
        </body>
        </html>
        """#
}
