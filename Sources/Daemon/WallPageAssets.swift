// The wall screen's one document (`GET /wall`): HTML, CSS and plain JavaScript, no build step,
// nothing fetched from outside the box. Made to be read from across the room on 1920×1080 and
// 1280×720: one banner with the box's health (recd's `health`, the same value as /api/health
// and `recctl status`), and per feed a big meter (dB scale, colour zones, peak hold, clip
// latch), its momentary and short-term loudness, and its state in words.
//
// It reads `/api/status` every second and the meters' server-sent events (`/events`). Its own
// watchdog: no answer from recd for `staleAfter` (3 s) turns the whole screen into an alarm
// that says since when, and greys every value it can no longer vouch for; stale meters alone
// grey their feed. Every value from recd is set with `textContent`, never parsed as HTML.
// A plain constant: any thread.

/// The wall screen's document, served as `text/html; charset=utf-8`; and the watchdog script
/// the status page shares.
enum WallPageAssets {
    /// The page's watchdog and time words, shared by `/` and `/wall` (one rule for both):
    /// `Watchdog(onChange)` with `fresh()` after each answer from recd; `utcTime(date)` gives
    /// "22:41:07 UTC"; `lasted(seconds)` "6 min", "2 h 5 min".
    static let sharedScript = #"""
        // Past this without an answer the screen is an alarm: with answers asked every second,
        // a recd that died is shown within 3 s of its death (its last answer came before it).
        const staleAfter = 2800;
        function pad2(n) { return String(n).padStart(2, "0"); }
        function utcClock(d) { return pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes()) + ":" + pad2(d.getUTCSeconds()); }
        function utcTime(d) { return utcClock(d) + " UTC"; }
        function utcDate(d) { return d.getUTCFullYear() + "-" + pad2(d.getUTCMonth() + 1) + "-" + pad2(d.getUTCDate()); }
        function lasted(s) {
          s = Math.max(0, Math.round(s));
          if (s < 60) return s + " s";
          if (s < 3600) return Math.floor(s / 60) + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
          const m = Math.round(s / 60);
          if (m < 1440) return Math.floor(m / 60) + " h" + (m % 60 ? " " + (m % 60) + " min" : "");
          const h = Math.round(s / 3600);
          return Math.floor(h / 24) + " day" + (h >= 48 ? "s" : "") + (h % 24 ? " " + (h % 24) + " h" : "");
        }
        // Whether recd answered within staleAfter: `fresh()` after each answer; the check runs
        // on its own timer, so a recd that is gone (or hangs) is noticed without any answer.
        class Watchdog {
          constructor(onChange) { this.last = null; this.staleSince = null; this.onChange = onChange; setInterval(() => this.check(), 100); }
          fresh() {
            this.last = Date.now();
            if (this.staleSince === null) return;
            this.staleSince = null;
            document.body.classList.remove("stale");
            document.body.dataset.stale = "no";
            this.onChange(null);
          }
          check() {
            const since = this.last ?? pageStart;
            if (this.staleSince === null && Date.now() - since > staleAfter) {
              this.staleSince = new Date(since);
              document.body.classList.add("stale");
              document.body.dataset.stale = "yes";
              document.body.dataset.staleAt = String(Date.now());
            }
            if (this.staleSince !== null) this.onChange(this.staleSince);
          }
        }
        const pageStart = Date.now();
        """#

    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <link rel="icon" href="data:,">
        <title>recd — wall</title>
        <style>
        :root { --ok: #1f9d3a; --warn: #e0a100; --alarm: #e0241b; --unknown: #6b7280;
                --bg: #0b0d10; --tile: #161a20; --fg: #f2f4f7; --dim: #9aa3ad; }
        * { box-sizing: border-box; }
        html, body { margin: 0; height: 100%; background: var(--bg); color: var(--fg);
                     font-family: system-ui, "DejaVu Sans", sans-serif; overflow: hidden; }
        body { display: flex; flex-direction: column; height: 100vh; }
        #banner { display: grid; grid-template-columns: auto 1fr auto; align-items: center; gap: 2vw;
                  padding: 1.2vh 2vw; min-height: 15vh; background: var(--unknown); }
        #banner[data-state=ok] { background: var(--ok); }
        #banner[data-state=warning] { background: var(--warn); color: #111; }
        #banner[data-state=alarm] { background: var(--alarm); }
        #state { font-size: 7.5vh; font-weight: 800; letter-spacing: .05em; line-height: 1; }
        #reasons { font-size: 3.1vh; line-height: 1.25; font-weight: 600; overflow: hidden; max-height: 12vh; }
        #since { font-size: 2.4vh; opacity: .9; font-weight: 500; }
        #clock { text-align: right; font-variant-numeric: tabular-nums; }
        #clock .time { font-size: 6.4vh; font-weight: 700; line-height: 1; }
        #clock .date { font-size: 2.4vh; opacity: .9; }
        #feeds { flex: 1; display: grid; gap: 1.2vh 1.2vw; padding: 1.2vh 1.2vw; min-height: 0; }
        .feed { background: var(--tile); border-left: 1.2vh solid var(--unknown); border-radius: .6vh;
                display: grid; grid-template-columns: minmax(0, 1fr) auto; grid-template-rows: auto 1fr;
                gap: .8vh 1.6vw; padding: 1.2vh 1.4vw; min-height: 0; }
        .feed[data-state=ok] { border-color: var(--ok); }
        .feed[data-state=warning] { border-color: var(--warn); }
        .feed[data-state=alarm] { border-color: var(--alarm); background: #3a1214; }
        .head { display: flex; align-items: baseline; gap: 1.4vw; min-width: 0; }
        .name { font-size: var(--name, 4.4vh); font-weight: 700; white-space: nowrap; }
        .words { font-size: var(--words, 3.4vh); font-weight: 600; color: var(--dim); white-space: nowrap;
                 overflow: hidden; text-overflow: ellipsis; }
        .feed[data-state=alarm] .words { color: #ff8a84; }
        .feed[data-state=warning] .words { color: var(--warn); }
        .lufs { grid-row: 1 / span 2; grid-column: 2; display: flex; flex-direction: column; justify-content: center;
                gap: .6vh; font-variant-numeric: tabular-nums; text-align: right; min-width: 13vw; }
        .lufs div { font-size: var(--lufs, 5.4vh); font-weight: 700; line-height: 1; }
        .lufs small { font-size: .45em; color: var(--dim); font-weight: 600; margin-right: .4em; }
        .lufs .unit { font-size: 2.2vh; color: var(--dim); font-weight: 600; }
        /* The bars take the tile's height, up to a bar a tenth of the screen high. */
        .meters { display: flex; flex-direction: column; justify-content: center; gap: .7vh; min-height: 0; }
        .row { display: grid; grid-template-columns: 2.2vw 1fr 5.5vw; align-items: stretch; gap: .8vw;
               flex: 1 1 0; min-height: 2.6vh; max-height: var(--bar, 9vh); }
        .row .ch, .row .clip { align-self: center; }
        .row .ch { font-size: 2.2vh; color: var(--dim); text-align: right; }
        .bar { position: relative; border-radius: .3vh; overflow: hidden;
               background: linear-gradient(to right, #12381c 0 70%, #4a3b0a 70% 90%, #4a1210 90% 100%); }
        /* The lit part shows the zone it reaches: green to -18 dBFS, amber to -6, red above. */
        .bar .level { position: absolute; inset: 0; clip-path: inset(0 100% 0 0);
                      background: linear-gradient(to right, #2fd158 0 70%, #ffc21a 70% 90%, #ff3b30 90% 100%); }
        .bar .hold { position: absolute; top: 0; bottom: 0; width: .35vw; background: #fff; left: 0; opacity: 0; }
        .clip { font-size: 2.2vh; font-weight: 800; text-align: center; padding: .3vh 0; border-radius: .3vh;
                border: .25vh solid #555; color: #555; cursor: pointer; user-select: none; }
        .clip[data-latched=yes] { background: var(--alarm); border-color: var(--alarm); color: #fff; }
        .scale { position: relative; height: 2.4vh; margin: 0 calc(5.5vw + .8vw) 0 calc(2.2vw + .8vw); }
        .scale span { position: absolute; transform: translateX(-50%); font-size: 2vh; color: var(--dim);
                      font-variant-numeric: tabular-nums; }
        .scale span:last-child { transform: translateX(-100%); }
        .scale .unit { left: calc(100% + 1.2vw); transform: none; }
        .nometer { font-size: 2.6vh; color: var(--dim); }
        #empty { font-size: 4vh; color: var(--dim); align-self: center; justify-self: center; }
        /* recd unreachable: the whole screen says so, and nothing old passes for now. */
        body.stale #feeds, body.stale #clock .date { filter: grayscale(1); opacity: .35; }
        body.stale #banner { background: var(--alarm) !important; color: #fff; }
        .feed.quiet .meters, .feed.quiet .lufs { filter: grayscale(1); opacity: .35; }
        #footer { font-size: 1.9vh; color: var(--dim); padding: 0 1.4vw .8vh; display: flex; justify-content: space-between; }
        #footer a { color: var(--dim); }
        </style>
        </head>
        <body>
        <div id="banner" data-state="unknown">
          <div id="state">UNKNOWN</div>
          <div><div id="reasons">waiting for recd…</div><div id="since"></div></div>
          <div id="clock"><div class="time">--:--:-- UTC</div><div class="date"></div></div>
        </div>
        <div id="feeds"><div id="empty">no feeds yet</div></div>
        <div id="footer"><span id="updated">not updated yet</span>
          <span><a href="./">status</a> · <a href="day">day</a> · <a href="browse">archive</a> · <a href="loudness">loudness</a></span></div>
        <script>
        "use strict";
        \#(sharedScript)
        const $ = (id) => document.getElementById(id);
        const floorDB = -60, clipDB = -0.1, holdMs = 2000, fallDBps = 20;
        const ticks = [-60, -48, -36, -24, -18, -12, -9, -6, -3, 0];
        const position = (db) => Math.max(0, Math.min(100, (db - floorDB) / -floorDB * 100));
        let status = null, health = null, staleSince = null, lastMeters = 0;
        const tiles = new Map();

        function tile(feed) {
          let t = tiles.get(feed);
          if (t) return t;
          const el = document.createElement("div");
          el.className = "feed";
          el.dataset.feed = feed;
          el.dataset.state = "unknown";
          const head = document.createElement("div");
          head.className = "head";
          const name = document.createElement("span");
          name.className = "name";
          name.textContent = feed;
          const words = document.createElement("span");
          words.className = "words";
          head.append(name, words);
          const meters = document.createElement("div");
          meters.className = "meters";
          const lufs = document.createElement("div");
          lufs.className = "lufs";
          const m = document.createElement("div"), s = document.createElement("div");
          const unit = document.createElement("span");
          unit.className = "unit";
          unit.textContent = "LUFS: momentary, short-term";
          lufs.append(m, s, unit);
          el.append(head, lufs, meters);
          t = { el, words, meters, m, s, rows: [], scale: null };
          tiles.set(feed, t);
          return t;
        }

        function meterRow(t, channel) {
          const row = document.createElement("div");
          row.className = "row";
          const ch = document.createElement("span");
          ch.className = "ch";
          ch.textContent = channel;
          const bar = document.createElement("div");
          bar.className = "bar";
          const level = document.createElement("div");
          level.className = "level";
          const hold = document.createElement("div");
          hold.className = "hold";
          bar.append(level, hold);
          const clip = document.createElement("div");
          clip.className = "clip";
          clip.textContent = "CLIP";
          clip.dataset.latched = "no";
          clip.title = "latched at a peak of 0 dBFS; click to reset";
          clip.addEventListener("click", () => { clip.dataset.latched = "no"; });
          row.append(ch, bar, clip);
          t.meters.append(row);
          const r = { row, level, hold, clip, holdDB: -120, holdAt: 0, peak: -120 };
          t.rows.push(r);
          return r;
        }

        function scale(t) {
          if (t.scale) return;
          t.scale = document.createElement("div");
          t.scale.className = "scale";
          const unit = document.createElement("span");
          unit.className = "unit";
          unit.textContent = "dBFS";
          t.scale.append(unit);
          for (const db of ticks) {
            const s = document.createElement("span");
            s.style.left = position(db) + "%";
            s.textContent = String(db);
            t.scale.append(s);
          }
          t.meters.append(t.scale);
        }

        function layout() {
          const n = Math.max(1, tiles.size);
          const columns = n <= 4 ? 1 : n <= 8 ? 2 : 3;
          const rows = Math.ceil(n / columns);
          const box = $("feeds");
          box.style.gridTemplateColumns = "repeat(" + columns + ", minmax(0, 1fr))";
          box.style.gridTemplateRows = "repeat(" + rows + ", minmax(0, 1fr))";
          // Type and bars shrink with the tiles, never below what reads at 3 m.
          const k = Math.max(0.62, Math.min(1, 2.6 / (rows + columns - 1)));
          box.style.setProperty("--name", (5.2 * k) + "vh");
          box.style.setProperty("--words", (3.8 * k) + "vh");
          box.style.setProperty("--lufs", (6 * k) + "vh");
          box.style.setProperty("--bar", (10 * k) + "vh");
        }

        function feedWords(f, rec) {
          const reasons = (f && f.reasons) || [];
          if (reasons.length) return reasons.map((r) => r.text.replace(f.feed + " ", "")).join("; ");
          if (rec) return "recording" + (rec.seconds != null ? " for " + lasted(rec.seconds) : "");
          return f ? f.state : "unknown";
        }

        function renderStatus(data) {
          status = data.status;
          health = status.health || null;
          const feeds = new Map(((health && health.feeds) || []).map((f) => [f.feed, f]));
          const recs = new Map(status.recorders.map((r) => [r.app + "/" + r.stream, r]));
          for (const name of new Set([...recs.keys(), ...feeds.keys()])) {
            const t = tile(name), f = feeds.get(name), rec = recs.get(name);
            t.el.dataset.state = f ? f.state : "unknown";
            t.words.textContent = feedWords(f, rec);
            t.port = rec ? rec.port : null;
            t.app = rec ? rec.app : name.split("/")[0];
            t.stream = rec ? rec.stream : name.split("/").slice(1).join("/");
          }
          for (const [name, t] of tiles) {
            if (!recs.has(name) && !feeds.has(name)) { t.el.remove(); tiles.delete(name); }
          }
          const box = $("feeds");
          const order = [...tiles.keys()].sort();
          for (const name of order) box.append(tiles.get(name).el);
          $("empty").style.display = tiles.size ? "none" : "";
          if (!tiles.size) box.append($("empty"));
          layout();
          renderBanner();
        }

        function renderBanner() {
          const b = $("banner");
          if (staleSince) {
            b.dataset.state = "alarm";
            $("state").textContent = "ALARM";
            $("reasons").textContent = "recd unreachable: no update for " + lasted((Date.now() - staleSince) / 1000) +
              "; everything below is old";
            $("since").textContent = "since " + utcTime(staleSince) + " · last values greyed";
            return;
          }
          if (!health) {
            b.dataset.state = "unknown";
            $("state").textContent = "UNKNOWN";
            $("reasons").textContent = status ? "this recd reports no health" : "waiting for recd…";
            $("since").textContent = "";
            return;
          }
          b.dataset.state = health.state;
          $("state").textContent = health.state === "ok" ? "ALL OK" : health.state.toUpperCase();
          const reasons = health.reasons || [];
          $("reasons").textContent = reasons.length
            ? reasons.slice(0, 3).map((r) => r.text).join("; ") + (reasons.length > 3 ? "; +" + (reasons.length - 3) + " more" : "")
            : "every feed records; JACK, disk, clock as they should be";
          $("since").textContent = health.since ? "since " + utcTime(new Date(health.since)) : "";
        }

        function renderMeters(data) {
          lastMeters = Date.now();
          const loud = new Map((data.recordings || []).map((r) => [r.app + "/" + r.stream, r]));
          for (const [name, t] of tiles) {
            const mine = data.meters.filter((m) => m.direction === "input" && t.port &&
              (m.group === t.port || m.group === t.port + "_in")).sort((a, b) => a.channel - b.channel);
            if (!mine.length && !t.rows.length && !t.none) {
              t.none = document.createElement("div");
              t.none.className = "nometer";
              t.none.textContent = "no meter for this feed's input";
              t.meters.append(t.none);
            }
            mine.forEach((m, i) => {
              if (t.none) { t.none.remove(); t.none = null; }
              const r = t.rows[i] || meterRow(t, m.channel);
              r.peak = Math.max(-120, m.peakDB);
              if (r.peak >= clipDB) r.clip.dataset.latched = "yes";
              r.row.dataset.peak = String(r.peak);
            });
            if (mine.length) scale(t);
            if (t.scale) t.meters.append(t.scale);
            const l = loud.get(name);
            const fmt = (v) => v == null ? "—" : v.toFixed(1);
            t.m.replaceChildren(Object.assign(document.createElement("small"), { textContent: "M" }), fmt(l && l.momentaryLufs));
            t.s.replaceChildren(Object.assign(document.createElement("small"), { textContent: "S" }), fmt(l && l.shortTermLufs));
          }
        }

        // The bars move on the screen's frames; peak hold falls after holdMs.
        function animate() {
          const now = Date.now();
          for (const t of tiles.values()) {
            t.el.classList.toggle("quiet", now - lastMeters > staleAfter);
            for (const r of t.rows) {
              const w = position(r.peak);
              r.level.style.clipPath = "inset(0 " + (100 - w) + "% 0 0)";
              if (r.peak >= r.holdDB) { r.holdDB = r.peak; r.holdAt = now; }
              else if (now - r.holdAt > holdMs) r.holdDB = Math.max(r.peak, r.holdDB - fallDBps * 0.05);
              r.hold.style.left = "calc(" + position(r.holdDB) + "% - .35vw)";
              r.hold.style.opacity = r.holdDB > floorDB ? "1" : "0";
              r.row.dataset.hold = String(r.holdDB);
            }
          }
          const d = new Date();
          document.querySelector("#clock .time").textContent = utcTime(d);
          document.querySelector("#clock .date").textContent = utcDate(d);
        }
        setInterval(animate, 50);

        const watchdog = new Watchdog((since) => {
          staleSince = since;
          renderBanner();
        });

        async function poll() {
          for (;;) {
            const abort = new AbortController();
            const timer = setTimeout(() => abort.abort(), 2000);
            try {
              const reply = await fetch("api/status", { cache: "no-store", signal: abort.signal });
              if (reply.ok) {
                renderStatus(await reply.json());
                watchdog.fresh();
                $("updated").textContent = "updated " + utcTime(new Date());
              } else {
                $("updated").textContent = "api/status: HTTP " + reply.status;
              }
            } catch (error) {
              $("updated").textContent = "recd unreachable";
            }
            clearTimeout(timer);
            await new Promise((resolve) => setTimeout(resolve, 1000));
          }
        }
        poll();
        const events = new EventSource("events");
        events.addEventListener("meters", (e) => renderMeters(JSON.parse(e.data)));
        </script>
        </body>
        </html>
        """#
}
