"use strict";
// Live updates for the pages of arena serve. The pages are complete without this file; it
// listens to the server-sent events of /api/events and redraws what changed. Data from the
// server (bot names, causes, anything a bot controls) is only ever set with textContent or
// as an attribute of an element made here: never parsed as HTML.
(function () {
  document.documentElement.classList.add("js");
  const body = document.body;
  const page = body.dataset.page;
  const handlers = {};
  let source = null;

  function on(kind, fn) {
    (handlers[kind] = handlers[kind] || []).push(fn);
    if (!source && window.EventSource) {
      source = new EventSource("/api/events");
      ["game_started", "move", "game_ended", "version", "pairing", "ladder", "bot", "error"].forEach(
        function (type) {
          source.addEventListener(type, function (e) {
            let data;
            try { data = JSON.parse(e.data); } catch (err) { return; }
            (handlers[type] || []).forEach(function (h) { h(data); });
          });
        });
    }
  }
  function getJSON(url) {
    return fetch(url, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); });
  }
  function throttle(fn, ms) {  // fn runs at most once per ms, and always after the last call
    let t = null;
    return function () { if (!t) t = setTimeout(function () { t = null; fn(); }, ms); };
  }
  function cell(tr, text, cls) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    if (text !== undefined && text !== null) td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  function link(parent, href, text) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    parent.appendChild(a);
    return a;
  }
  function fixed(x, digits) { return x === null || x === undefined ? "\u2013" : Number(x).toFixed(digits); }
  function pct(x) { return x === null || x === undefined ? "\u2013" : Math.round(x * 100) + "%"; }
  function when(s) { return s ? String(s).replace("T", " ").slice(0, 19) : "\u2013"; }
  function botOf(label) { const m = /^(.*)\.v\d+$/.exec(label); return m ? m[1] : label; }
  const ENDINGS = {timeout: "time ran out", crash: "a crash", illegal_move: "an illegal move",
                   malformed: "a malformed message", schema: "a message breaking the schema",
                   oversize: "an oversize message", protocol: "a protocol error",
                   start_failure: "a failure to start", interrupted: "an interruption"};

  // ------------------------------------------------------------------ every page: the ladder's state
  on("ladder", function (d) {
    if (d.paused === undefined) return;
    document.getElementById("status").textContent = d.paused ? "The ladder is paused: no new game starts." : "";
  });

  on("error", function (d) {  // the organizer hears what went wrong (a game not stored, the host gone)
    if (page === "admin" && d.message) document.getElementById("status").textContent = "The server: " + d.message;
  });

  // ------------------------------------------------------------------ the rating chart
  const COLORS = ["#e8590c", "#5f3dc4", "#2b8a3e", "#1c7ed6", "#c2255c", "#f08c00", "#0c8599", "#495057"];
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, parent) {
    const node = document.createElementNS(SVG, tag);
    for (const key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function drawChart(box, series) {
    box.textContent = "";
    const W = 760, H = 260, L = 46, R = 150, T = 12, B = 28;
    const root = svg("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img"}, box);
    svg("title", {}, root).textContent = "TrueSkill mu over the ladder's games";
    const points = [].concat.apply([], series.map(function (s) { return s.points; }));
    if (!points.length) {
      svg("text", {x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#6c757d"}, root).textContent =
        "no rated game yet";
      return;
    }
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    points.forEach(function (p) {
      x0 = Math.min(x0, p.game); x1 = Math.max(x1, p.game); y0 = Math.min(y0, p.mu); y1 = Math.max(y1, p.mu);
    });
    if (x1 === x0) x1 = x0 + 1;
    if (y1 - y0 < 1) { y0 -= 0.5; y1 += 0.5; }
    const X = function (x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
    const Y = function (y) { return T + (y1 - y) / (y1 - y0) * (H - T - B); };
    svg("rect", {x: L, y: T, width: W - L - R, height: H - T - B, fill: "none", stroke: "#dee2e6"}, root);
    [y0, (y0 + y1) / 2, y1].forEach(function (v) {
      svg("text", {x: L - 6, y: Y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#6c757d"}, root)
        .textContent = v.toFixed(1);
    });
    [[x0, "start"], [x1, "end"]].forEach(function (v) {
      svg("text", {x: X(v[0]), y: H - 8, "text-anchor": v[1], "font-size": 11, fill: "#6c757d"}, root)
        .textContent = "game " + v[0];
    });
    series.forEach(function (s, i) {
      const color = COLORS[i % COLORS.length];
      if (s.points.length) {
        const line = svg("polyline", {fill: "none", stroke: color, "stroke-width": 2,
                                      points: s.points.map(function (p) { return X(p.game).toFixed(1) + "," +
                                                                         Y(p.mu).toFixed(1); }).join(" ")}, root);
        svg("title", {}, line).textContent = s.name;
      }
      svg("rect", {x: W - R + 10, y: T + 4 + i * 18, width: 10, height: 10, fill: color}, root);
      const label = svg("text", {x: W - R + 26, y: T + 13 + i * 18, "font-size": 12, fill: "#212529"}, root);
      label.textContent = s.name.length > 18 ? s.name.slice(0, 17) + "\u2026" : s.name;
    });
  }
  function chartSeries(name, perVersion) {
    return getJSON("/api/bots/" + encodeURIComponent(name)).then(function (bot) {
      const out = [];
      const history = bot.history || {};
      if (perVersion) {
        Object.keys(history).forEach(function (label) { out.push({name: label, points: history[label]}); });
      } else if (bot.playing_version !== null && bot.playing_version !== undefined) {
        const label = bot.name + ".v" + bot.playing_version;
        out.push({name: bot.name, points: history[label] || []});
      }
      out.forEach(function (s) { s.points = s.points.slice().sort(function (a, b) { return a.game - b.game; }); });
      return out;
    });
  }
  function setupChart() {
    const box = document.getElementById("chart");
    if (!box) return;
    const names = (box.dataset.bots || "").split(" ").filter(Boolean);
    const perVersion = box.dataset.versions === "1";
    function redraw() {
      Promise.all(names.map(function (n) { return chartSeries(n, perVersion).catch(function () { return []; }); }))
        .then(function (all) { drawChart(box, [].concat.apply([], all)); });
    }
    redraw();
    const pick = document.getElementById("chart-pick");
    if (pick) pick.addEventListener("change", function () {
      if (pick.value && names.indexOf(pick.value) < 0) { names.push(pick.value); redraw(); }
    });
    on("game_ended", throttle(redraw, 1500));
  }

  // ------------------------------------------------------------------ the leaderboard
  function leaderboard() {
    const tbody = document.querySelector("#leaderboard tbody");
    function rows(list) {
      const before = {};
      tbody.querySelectorAll("tr[data-bot]").forEach(function (tr) {
        before[tr.dataset.bot] = tr.querySelector("td.games").textContent;
      });
      tbody.textContent = "";
      if (!list.length) { const tr = document.createElement("tr"); cell(tr, "No bot plays yet.").colSpan = 12;
                          tbody.appendChild(tr); return; }
      list.forEach(function (r) {
        const tr = document.createElement("tr");
        tr.dataset.bot = r.bot;
        cell(tr, String(r.rank), "n");
        link(cell(tr), "/bots/" + encodeURIComponent(r.bot), r.bot);
        cell(tr, r.author === null ? "\u2013" : r.author);
        cell(tr, "v" + r.version);
        cell(tr, fixed(r.mu, 2), "n");
        cell(tr, fixed(r.sigma, 2), "n");
        cell(tr, fixed(r.conservative, 2), "n");
        const elo = cell(tr, r.elo === null ? "\u2013" : fixed(r.elo, 0) + " ", "n");
        if (r.elo !== null) {
          const span = document.createElement("span");
          span.className = "muted";
          span.textContent = "(" + fixed(r.elo_low, 0) + "\u2013" + fixed(r.elo_high, 0) + ")";
          elo.appendChild(span);
        }
        cell(tr, String(r.games), "n games");
        cell(tr, pct(r.win_rate), "n");
        cell(tr, String(r.failures), "n");
        const last = cell(tr);
        if (r.last_game) link(last, "/games/" + encodeURIComponent(r.last_game), when(r.last_at));
        else last.textContent = "\u2013";
        if (before[r.bot] !== String(r.games)) tr.className = "moved";
        tbody.appendChild(tr);
      });
    }
    const refresh = throttle(function () { getJSON("/api/leaderboard").then(rows).catch(function () {}); }, 250);
    on("game_ended", refresh);
    on("version", refresh);
    on("bot", refresh);
    on("ladder", refresh);
    const running = document.getElementById("running");
    const countRunning = throttle(function () {
      getJSON("/api/ladder").then(function (l) {
        running.textContent = String(l.running);
        document.getElementById("games-stored").textContent = String(l.games);
      }).catch(function () {});
    }, 500);
    on("game_started", countRunning);
    on("game_ended", countRunning);
    setupChart();
  }

  // ------------------------------------------------------------------ the games
  function games() {
    const tbody = document.querySelector("#games tbody");
    const bot = body.dataset.bot;
    function rows(list) {
      tbody.textContent = "";
      if (!list.length) { const tr = document.createElement("tr"); cell(tr, "No game yet.").colSpan = 7;
                          tbody.appendChild(tr); return; }
      list.forEach(function (g) {
        const tr = document.createElement("tr");
        tr.dataset.game = g.id;
        tr.className = g.state;
        link(cell(tr), "/games/" + encodeURIComponent(g.id), g.id);
        cell(tr, g.state);
        g.players.forEach(function (p) { link(cell(tr), "/bots/" + encodeURIComponent(botOf(p)), p); });
        let result = "in progress";
        if (g.result) {
          result = g.result.winner_name + " wins " + g.result.scores[0] + " : " + g.result.scores[1];
          if (g.result.reason !== "normal") result += " (" + (ENDINGS[g.result.reason] || g.result.reason) + ")";
        }
        cell(tr, result);
        cell(tr, String(g.moves), "n");
        cell(tr, when(g.started_at));
        tbody.appendChild(tr);
      });
    }
    const refresh = throttle(function () {
      getJSON("/api/games?limit=100" + (bot ? "&bot=" + encodeURIComponent(bot) : "")).then(rows)
        .catch(function () {});
    }, 400);
    on("game_started", refresh);
    on("game_ended", refresh);
  }

  // ------------------------------------------------------------------ a game, live
  function game() {
    const id = body.dataset.game;
    const delay = Math.max(0, parseInt(body.dataset.delay || "0", 10)) * 1000;
    const src = body.dataset.replay;
    let busy = false, again = false;
    function catchUp() {  // fetch the moves made since the ones shown
      const viewer = window.arenaReplay;
      if (!viewer || viewer.finished()) return;
      if (busy) { again = true; return; }
      busy = true;
      getJSON(src + "?start=" + viewer.moves()).then(function (more) {
        viewer.extend(more);
      }).catch(function () {}).then(function () {
        busy = false;
        if (again) { again = false; catchUp(); }
      });
    }
    function later(fn) { if (delay) setTimeout(fn, delay); else fn(); }
    on("move", function (d) { if (d.id === id) later(catchUp); });
    on("game_ended", function (d) { if (d.id === id) later(catchUp); });
    document.addEventListener("arenareplayready", catchUp);
  }

  // ------------------------------------------------------------------ my arena
  function me() {
    on("version", function (d) {
      const tr = document.querySelector('tr[data-version-id="' + Number(d.id) + '"]');
      if (!tr) {  // a version uploaded since the page was made: reload to list it
        if (d.state === "queued" && document.getElementById("upload-status")) {
          document.getElementById("upload-status").textContent = "a new version is queued: reload to see it";
        }
        return;
      }
      const state = tr.querySelector(".state");
      state.textContent = d.state;
      state.className = "state " + String(d.state).replace(/[^a-z]/g, "");
      if (d.cause !== undefined) tr.querySelector(".cause").textContent = d.cause;
    });
    folderUpload();
  }

  // A chosen folder is packed here as a .zip (stored, not compressed) and sent by the same form.
  const CRC = (function () {
    const t = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      t[n] = c >>> 0;
    }
    return t;
  })();
  function crc32(bytes) {
    let c = 0xffffffff;
    for (let i = 0; i < bytes.length; i++) c = CRC[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  }
  function zip(files) {  // files: [{name, bytes}]
    const parts = [], central = [];
    let offset = 0;
    const enc = new TextEncoder();
    files.forEach(function (f) {
      const name = enc.encode(f.name), crc = crc32(f.bytes), size = f.bytes.length;
      const head = new DataView(new ArrayBuffer(30));
      head.setUint32(0, 0x04034b50, true); head.setUint16(4, 20, true); head.setUint16(6, 0x0800, true);
      head.setUint16(8, 0, true); head.setUint32(14, crc, true); head.setUint32(18, size, true);
      head.setUint32(22, size, true); head.setUint16(26, name.length, true);
      parts.push(head, name, f.bytes);
      const dir = new DataView(new ArrayBuffer(46));
      dir.setUint32(0, 0x02014b50, true); dir.setUint16(4, 0x0314, true); dir.setUint16(6, 20, true);
      dir.setUint16(8, 0x0800, true); dir.setUint32(16, crc, true); dir.setUint32(20, size, true);
      dir.setUint32(24, size, true); dir.setUint16(28, name.length, true);
      dir.setUint32(38, (0o100644 << 16) >>> 0, true); dir.setUint32(42, offset, true);
      central.push(dir, name);
      offset += 30 + name.length + size;
    });
    let dirSize = 0;
    central.forEach(function (p) { dirSize += p.byteLength; });
    const endRecord = new DataView(new ArrayBuffer(22));
    endRecord.setUint32(0, 0x06054b50, true); endRecord.setUint16(8, files.length, true);
    endRecord.setUint16(10, files.length, true); endRecord.setUint32(12, dirSize, true);
    endRecord.setUint32(16, offset, true);
    return new Blob(parts.concat(central, [endRecord]), {type: "application/zip"});
  }
  function folderUpload() {
    const form = document.getElementById("upload");
    const folder = document.getElementById("folder");
    if (!form || !folder) return;
    const status = document.getElementById("upload-status");
    form.addEventListener("submit", function (e) {
      if (!folder.files.length) return;  // the plain form sends the chosen archive
      e.preventDefault();
      status.textContent = "packing " + folder.files.length + " files\u2026";
      const list = Array.prototype.slice.call(folder.files);
      Promise.all(list.map(function (file) {
        return file.arrayBuffer().then(function (buf) {
          const path = (file.webkitRelativePath || file.name).split("/");
          return {name: path.length > 1 ? path.slice(1).join("/") : path[0], bytes: new Uint8Array(buf)};
        });
      })).then(function (files) {
        const data = new FormData();
        data.append("csrf", form.elements.csrf.value);
        data.append("name", form.elements.name.value);
        data.append("archive", zip(files), "folder.zip");
        status.textContent = "uploading\u2026";
        // not following the redirect: the next page shows the server's note on the upload
        return fetch(form.action, {method: "POST", body: data, credentials: "same-origin", redirect: "manual"});
      }).then(function () { window.location.assign("/me"); })
        .catch(function (err) { status.textContent = "the upload failed: " + err.message; });
    });
  }

  // ------------------------------------------------------------------ a bot
  function bot() {
    setupChart();
    on("version", function (d) {
      const tr = document.querySelector('tr[data-version-id="' + Number(d.id) + '"]');
      if (!tr) return;
      tr.querySelector(".state").textContent = d.state;
      if (d.cause !== undefined) tr.querySelector(".cause").textContent = d.cause;
    });
  }

  const pages = {leaderboard: leaderboard, games: games, game: game, me: me, bot: bot};
  if (pages[page]) pages[page]();
})();
