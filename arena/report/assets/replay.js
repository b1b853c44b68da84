"use strict";
// The replay viewer of one game (arena/report/replay_html.py renders templates/replay.html,
// which inlines this file). Everything it shows comes from the "game-data" JSON block, or
// (arena serve's game page) from the JSON at the body's data-replay address: states, moves,
// board, patches (see replay_data()). Text from the record (bot names, info strings,
// failure details) is only ever set with textContent.
// A game in progress (D.result null) grows: window.arenaReplay.extend({from, moves, states,
// result}) appends the moves made since, and a viewer showing the last move follows them.
(function () {
 function start(D) {
  const S = D.states, M = D.moves, B = D.board, P = D.patches;
  const NS = "http://www.w3.org/2000/svg";
  const SEAT = ["var(--p0)", "var(--p1)"];
  const SEAT_HEX = ["#e8590c", "#5f3dc4"];
  const LEATHER = "#8d5524";
  const CELL = 26;
  let N = S.length - 1;
  let k = 0, timer = null;

  function el(tag, attrs, parent) {
    const node = document.createElementNS(NS, tag);
    for (const key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function h(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function title(node, text) { el("title", {}, node).textContent = text; return node; }
  function patchColor(id) {
    if (id === null || id === undefined) return LEATHER;
    const hue = (id * 137.508 + 20) % 360;
    return "hsl(" + hue.toFixed(1) + ", 62%, " + (id % 2 ? 70 : 60) + "%)";
  }
  function patchText(id) {
    const p = P[String(id)];
    return "patch " + id + ": " + p.cost + " " + B.currency + ", " + p.time + " time" +
      (p.income ? ", +" + p.income + " income" : "");
  }
  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "";
    return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : (ms >= 10 ? ms.toFixed(0) : ms.toFixed(1)) + " ms";
  }

  // ---------------------------------------------------------------- header and move list
  document.getElementById("title").textContent = D.players[0] + " vs " + D.players[1];
  const meta = [];
  if (D.game_id) meta.push("game " + D.game_id);
  if (D.seed !== null && D.seed !== undefined) meta.push("seed " + D.seed);
  if (D.ruleset !== "patchwork") meta.push(D.ruleset === "stack-n-stuff" ? "Stack'n Stuff" : D.ruleset);
  meta.push(D.edition + " edition");
  meta.push(D.players[D.first_player] + " moves first");
  if (D.time_control) meta.push("time control " + D.time_control.per_move_ms + " ms per move, bank " +
                                D.time_control.bank_ms + " ms");
  document.getElementById("meta").textContent = meta.join(" \u00b7 ");
  if (D.unverified) document.getElementById("meta").appendChild(h("div", "detail", D.unverified));
  const res = document.getElementById("result");
  const list = document.getElementById("moves");
  const end = h("li", "result");
  list.appendChild(end);
  function showResult() {
    if (!D.result) {
      res.textContent = "In progress: the moves appear as they are made.";
      end.textContent = "game in progress";
      return;
    }
    res.textContent = "Result: " + D.result.text +
      (D.result.reason === "normal" ? "" : " (" + D.result.reason + ")");
    if (D.result.detail) res.appendChild(h("div", "detail", D.result.detail));
    end.textContent = D.result.text;
  }
  showResult();

  const items = [];
  const limit = D.time_control ? D.time_control.per_move_ms : null;
  const firstMs = D.time_control ? D.time_control.first_move_ms : null;
  const seen = [false, false];
  function addMove(m, i) {
    const li = h("li");
    const who = h("span", "who", D.players[m.player]);
    who.style.color = SEAT[m.player];
    li.appendChild(who);
    li.appendChild(document.createTextNode(" " + m.text));
    if (m.time_ms !== null && m.time_ms !== undefined) {
      const allowed = seen[m.player] ? limit : firstMs;
      const ms = h("span", "ms" + (allowed !== null && m.time_ms > allowed ? " over" : ""), fmtMs(m.time_ms));
      if (allowed !== null) ms.title = "limit " + allowed + " ms";
      li.insertBefore(ms, li.firstChild);
    }
    seen[m.player] = true;
    if (m.info) li.appendChild(h("span", "info", m.info));
    li.addEventListener("click", function () { go(i + 1); });
    list.insertBefore(li, end);
    items.push(li);
  }
  M.forEach(addMove);

  // ---------------------------------------------------------------- quilts
  // The four neighbours of a cell, each with the edge between them: [row, col, x1, y1, x2, y2].
  function SIDES(r, c) {
    return [[r - 1, c, 0, 0, 1, 0], [r + 1, c, 0, 1, 1, 1], [r, c - 1, 0, 0, 0, 1], [r, c + 1, 1, 0, 1, 1]];
  }
  function quiltSvg(state, p, move) {
    const rows = B.rows, cols = B.cols, pad = 3;
    const svg = el("svg", {width: cols * CELL + 2 * pad, height: rows * CELL + 2 * pad,
                           viewBox: "0 0 " + (cols * CELL + 2 * pad) + " " + (rows * CELL + 2 * pad),
                           "class": "quilt", "data-player": p});
    const g = el("g", {transform: "translate(" + pad + "," + pad + ")"}, svg);
    el("rect", {x: 0, y: 0, width: cols * CELL, height: rows * CELL, fill: "#f4ede1", stroke: "#b9a88e"}, g);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++)
      el("rect", {x: c * CELL + 0.5, y: r * CELL + 0.5, width: CELL - 1, height: CELL - 1, fill: "none",
                  stroke: "#e0d5c3", "stroke-dasharray": "2 2"}, g);
    state.placed[p].forEach(function (entry, i) {
      const color = patchColor(entry.patch);
      const key = new Set(entry.cells.map(function (x) { return x[0] * cols + x[1]; }));
      const pg = el("g", {"class": "patch"}, g);
      title(pg, entry.patch === null ? "special patch" : patchText(entry.patch));
      entry.cells.forEach(function (x) {
        el("rect", {x: x[1] * CELL, y: x[0] * CELL, width: CELL, height: CELL, fill: color}, pg);
      });
      entry.cells.forEach(function (x) {
        const r = x[0], c = x[1];
        SIDES(r, c).forEach(function (s) {
          if (s[0] >= 0 && s[0] < rows && s[1] >= 0 && s[1] < cols && key.has(s[0] * cols + s[1])) return;
          el("line", {x1: (c + s[2]) * CELL, y1: (r + s[3]) * CELL, x2: (c + s[4]) * CELL,
                      y2: (r + s[5]) * CELL, stroke: "#3b3024", "stroke-width": 1.6,
                      "stroke-linecap": "square"}, pg);
        });
      });
    });
    state.quilts[p].forEach(function (row, r) {
      for (let c = 0; c < row.length; c++) if (row[c] === "o") {
        const cx = c * CELL + CELL / 2, cy = r * CELL + CELL / 2;
        el("circle", {cx: cx, cy: cy, r: CELL * 0.27, fill: "#1c3f94", stroke: "white",
                      "stroke-width": 1.5}, g);
        for (const d of [[-1, -1], [1, -1], [-1, 1], [1, 1]])
          el("circle", {cx: cx + d[0] * 2.3, cy: cy + d[1] * 2.3, r: 0.9, fill: "white"}, g);
      }
    });
    if (move && move.player === p && move.cells) {
      const key = new Set(move.cells.map(function (x) { return x[0] * cols + x[1]; }));
      move.cells.forEach(function (x) {
        const r = x[0], c = x[1];
        SIDES(r, c).forEach(function (s) {
          if (key.has(s[0] * cols + s[1]) && s[0] >= 0 && s[0] < rows && s[1] >= 0 && s[1] < cols) return;
          el("line", {x1: (c + s[2]) * CELL, y1: (r + s[3]) * CELL, x2: (c + s[4]) * CELL,
                      y2: (r + s[5]) * CELL, stroke: "#d6336c", "stroke-width": 3.5,
                      "stroke-linecap": "round", "class": "last"}, g);
        });
      });
    }
    return svg;
  }

  function playerPanel(state, p, move) {
    const box = document.getElementById("p" + p);
    box.textContent = "";
    box.className = "player" + (state.to_move === p ? " tomove" : "");
    const head = h("h2");
    const tok = h("span", "token"); tok.style.background = SEAT[p];
    head.appendChild(tok);
    head.appendChild(document.createTextNode(D.players[p]));
    if (state.to_move === p) {
      head.appendChild(h("span", "badge", state.decision === "special" ? "places special" : "to move"));
    }
    box.appendChild(head);
    const stats = h("div", "stats");
    [[state.buttons[p], B.currency], [state.income[p], "income"], [state.empty[p], "empty"],
     [state.scores[p], "score"]].forEach(function (v) {
      const cell = h("div");
      cell.appendChild(h("b", null, String(v[0])));
      cell.appendChild(h("span", null, v[1]));
      stats.appendChild(cell);
    });
    box.appendChild(stats);
    box.appendChild(quiltSvg(state, p, move));
    const extra = [];
    extra.push("time " + state.positions[p] + " / " + B.final_space);
    if (state.bonus_owner === p) extra.push("\u2605 " + B.bonus_square + "\u00d7" + B.bonus_square +
                                             " bonus +" + B.bonus_points);
    if (state.first_to_finish === p) extra.push("finished first");
    box.appendChild(h("div", "extra", extra.join(" \u00b7 ")));
  }

  // ---------------------------------------------------------------- circle of patches
  function miniPatch(parent, id, cx, cy, size, dim) {
    const shape = P[String(id)].shape;
    const hgt = shape.length, wid = shape[0].length;
    const g = el("g", {"class": "mini", "data-patch": id, opacity: dim ? 0.45 : 1}, parent);
    title(g, patchText(id));
    const x0 = cx - wid * size / 2, y0 = cy - hgt * size / 2;
    shape.forEach(function (row, r) {
      for (let c = 0; c < row.length; c++) {
        if (row[c] === ".") continue;
        el("rect", {x: x0 + c * size, y: y0 + r * size, width: size, height: size, fill: patchColor(id),
                    stroke: "#3b3024", "stroke-width": 0.6}, g);
        if (row[c] === "o") {
          el("circle", {cx: x0 + (c + 0.5) * size, cy: y0 + (r + 0.5) * size, r: size * 0.28,
                        fill: "#1c3f94"}, g);
        }
      }
    });
    return g;
  }

  function ring(state) {
    const svg = document.getElementById("ring");
    svg.textContent = "";
    const cx = 210, cy = 210, R = 178;
    el("circle", {cx: cx, cy: cy, r: R, fill: "none", stroke: "#e9ecef", "stroke-width": 34}, svg);
    const circle = state.circle, n = circle.length;
    const step = 2 * Math.PI / (n + 1);
    const neutral = el("g", {"class": "neutral"}, svg);
    title(neutral, "neutral token: the next three patches after it may be bought");
    el("circle", {cx: cx, cy: cy - R, r: 8, fill: "#343a40", stroke: "white", "stroke-width": 2}, neutral);
    const mover = state.to_move;
    const money = mover === null ? Infinity : state.buttons[mover];
    circle.forEach(function (id, i) {
      const a = -Math.PI / 2 + (i + 1) * step;
      const x = cx + R * Math.cos(a), y = cy + R * Math.sin(a);
      if (i < 3) {
        el("circle", {cx: x, cy: y, r: 15.5, fill: "#fff3bf", stroke: "#f08c00", "stroke-width": 2}, svg);
        el("text", {x: x - 25 * Math.cos(a), y: y - 25 * Math.sin(a) + 4, "text-anchor": "middle",
                    "font-size": 11, "font-weight": 700, fill: "#e67700"}, svg).textContent = String(i + 1);
      }
      const shape = P[String(id)].shape;
      const size = Math.min(5.5, 24 / Math.max(shape.length, shape[0].length));
      miniPatch(svg, id, x, y, size, false);
    });
    const mid = {"text-anchor": "middle"};
    el("text", Object.assign({x: cx, y: cy + 86, "font-size": 12, fill: "#6c757d"}, mid), svg).textContent =
      n + " patch" + (n === 1 ? "" : "es") + " left in the circle";
    el("text", Object.assign({x: cx, y: cy - 92, "font-size": 13, "font-weight": 600, fill: "#495057"}, mid),
       svg).textContent = n ? "next choices" : "no patches left";
    circle.slice(0, 3).forEach(function (id, i) {
      const x = cx + (i - 1) * 72, y = cy - 30;
      const p = P[String(id)];
      const afford = p.cost <= money;
      const g = el("g", {"class": "choice", "data-patch": id}, svg);
      el("rect", {x: x - 33, y: cy - 80, width: 66, height: 132, rx: 8, fill: afford ? "#fff9db" : "#f1f3f5",
                  stroke: afford ? "#f08c00" : "#ced4da"}, g);
      el("text", Object.assign({x: x, y: cy - 66, "font-size": 11, "font-weight": 700, fill: "#e67700"}, mid),
         g).textContent = (i + 1) + "  #" + id;
      const size = Math.min(11, 56 / Math.max(p.shape.length, p.shape[0].length));
      miniPatch(g, id, x, y + 6, size, !afford);
      [["cost " + p.cost, "#212529"], ["time " + p.time, "#212529"],
       [p.income ? "+" + p.income + " income" : "no income", "#1c3f94"]].forEach(function (t, j) {
        el("text", Object.assign({x: x, y: cy + 18 + 13 * j, "font-size": 11, fill: t[1]}, mid),
           g).textContent = t[0];
      });
    });
    if (mover !== null && n) {
      el("text", Object.assign({x: cx, y: cy + 68, "font-size": 11, fill: "#6c757d"}, mid), svg).textContent =
        "greyed: " + D.players[mover] + " cannot afford it";
    }
  }

  // ---------------------------------------------------------------- time board
  function timeboard(state) {
    const svg = document.getElementById("timeboard");
    svg.textContent = "";
    const W = 17, n = B.final_space + 1, left = 14, top = 30;
    const width = left * 2 + n * W, height = top + W + 34;
    svg.setAttribute("width", width); svg.setAttribute("height", height);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    const income = new Set(B.income_spaces), specials = new Set(B.special_spaces);
    const left_ = new Set(state.special_spaces_left);
    for (let s = 0; s < n; s++) {
      const x = left + s * W;
      const cell = el("g", {"class": "space", "data-space": s}, svg);
      const fill = s === n - 1 ? "#ffe8cc" : (s % 2 ? "#f8f0e3" : "#efe3cf");
      el("rect", {x: x, y: top, width: W, height: W, fill: fill, stroke: "#b9a88e", "stroke-width": 0.8},
         cell);
      let tip = "space " + s;
      if (income.has(s)) {
        el("circle", {cx: x + W / 2, cy: top + W / 2, r: 5, fill: "#1c7ed6", stroke: "white",
                      "stroke-width": 1}, cell);
        tip += ": income";
      }
      if (specials.has(s)) {
        const here = left_.has(s);
        el("rect", {x: x + 4, y: top + 4, width: W - 8, height: W - 8, fill: here ? LEATHER : "none",
                    stroke: LEATHER, "stroke-dasharray": here ? "" : "2 2"}, cell);
        tip += here ? ": special patch" : ": special patch (taken)";
      }
      title(cell, tip);
      if (s % 5 === 0 || s === n - 1)
        el("text", {x: x + W / 2, y: top + W + 28, "text-anchor": "middle", "font-size": 9, fill: "#868e96"},
           svg).textContent = String(s);
    }
    [0, 1].forEach(function (p) {
      const pos = state.positions[p];
      const x = left + pos * W + W / 2;
      const y = p === 0 ? top - 11 : top + W + 11;
      const g = el("g", {"class": "token", "data-player": p, "data-space": pos}, svg);
      const stacked = state.positions[0] === state.positions[1];
      title(g, D.players[p] + " on space " + pos + (stacked && state.on_top === p ? " (on top)" : ""));
      el("line", {x1: x, y1: p === 0 ? y + 7 : y - 7, x2: x, y2: p === 0 ? top : top + W, stroke: SEAT_HEX[p],
                  "stroke-width": 2}, g);
      el("circle", {cx: x, cy: y, r: 8, fill: SEAT_HEX[p], stroke: "white", "stroke-width": 1.5}, g);
      el("text", {x: x, y: y + 3.5, "text-anchor": "middle", "font-size": 10, "font-weight": 700,
                  fill: "white"}, g).textContent = D.players[p].slice(0, 1).toUpperCase();
    });
  }

  // ---------------------------------------------------------------- stepping
  const slider = document.getElementById("slider");
  slider.max = String(N);
  function render() {
    const state = S[k], move = k > 0 ? M[k - 1] : null;
    playerPanel(state, 0, move);
    playerPanel(state, 1, move);
    ring(state);
    timeboard(state);
    slider.value = String(k);
    const counter = document.getElementById("counter");
    counter.textContent = (k === 0 ? "start" : "move " + k) + " of " + N;
    counter.dataset.ply = String(k);
    document.body.dataset.ply = String(k);
    const last = document.getElementById("lastmove");
    last.textContent = "";
    if (move) {
      const who = h("b", null, D.players[move.player]); who.style.color = SEAT[move.player];
      last.appendChild(document.createTextNode(k + ". "));
      last.appendChild(who);
      const timed = move.time_ms !== null && move.time_ms !== undefined;
      const took = timed ? " (" + fmtMs(move.time_ms) + ")" : "";
      last.appendChild(document.createTextNode(" " + move.text + took));
    } else {
      last.textContent = "Starting position: " + D.players[D.first_player] + " moves first.";
    }
    if (k === N && D.result) {
      last.appendChild(h("div", null, "Game over: " + D.result.text +
                         (D.result.detail ? " \u2014 " + D.result.detail : "")));
    }
    items.forEach(function (li, i) { li.classList.toggle("current", i === k - 1); });
    end.classList.toggle("current", k === N && !!D.result);
    const cur = k > 0 ? items[k - 1] : null;
    if (cur) {
      const box = list.getBoundingClientRect(), r = cur.getBoundingClientRect();
      if (r.top < box.top || r.bottom > box.bottom) list.scrollTop += r.top - box.top - box.height / 2;
    } else { list.scrollTop = 0; }
  }
  function go(i) { k = Math.max(0, Math.min(N, i)); render(); }
  function stop() {
    if (!timer) return;
    clearInterval(timer);
    timer = null;
    document.getElementById("play").textContent = "play";
  }
  function play() {
    if (timer) { stop(); return; }
    if (k === N) go(0);
    document.getElementById("play").textContent = "pause";
    timer = setInterval(function () { if (k >= N) stop(); else go(k + 1); }, 700);
  }
  document.getElementById("first").addEventListener("click", function () { stop(); go(0); });
  document.getElementById("prev").addEventListener("click", function () { stop(); go(k - 1); });
  document.getElementById("next").addEventListener("click", function () { stop(); go(k + 1); });
  document.getElementById("last").addEventListener("click", function () { stop(); go(N); });
  document.getElementById("play").addEventListener("click", play);
  slider.addEventListener("input", function () { stop(); go(parseInt(slider.value, 10)); });
  document.addEventListener("keydown", function (e) {
    if (e.target === slider || e.altKey || e.ctrlKey || e.metaKey) return;  // the slider steps itself
    const keys = {ArrowRight: k + 1, ArrowDown: k + 1, ArrowLeft: k - 1, ArrowUp: k - 1, Home: 0, End: N,
                  PageDown: k + 10, PageUp: k - 10};
    if (e.key in keys) { e.preventDefault(); stop(); go(keys[e.key]); }
    else if (e.key === " " && !/^(BUTTON|A|INPUT|SELECT|TEXTAREA|SUMMARY)$/.test(e.target.tagName)) {
      e.preventDefault();  // on a focused button or link, space keeps its own meaning
      play();
    }
  });
  function extend(more) {
    if (more.from !== M.length) return false;  // not the next moves: the caller asks again
    const follow = k === N;
    more.moves.forEach(function (m) { M.push(m); addMove(m, M.length - 1); });
    more.states.forEach(function (s) { S.push(s); });
    N = S.length - 1;
    slider.max = String(N);
    if (more.result) D.result = more.result;
    showResult();
    go(follow ? N : k);
    return true;
  }
  window.arenaReplay = {extend: extend, moves: function () { return M.length; },
                        finished: function () { return !!D.result; }};
  document.dispatchEvent(new Event("arenareplayready"));
  go(D.result ? 0 : N);
 }

  const block = document.getElementById("game-data");
  if (block) {
    start(JSON.parse(block.textContent));
  } else if (document.body.dataset.replay) {
    fetch(document.body.dataset.replay, {credentials: "same-origin"})
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(start)
      .catch(function (e) {
        document.getElementById("result").textContent = "The game could not be loaded: " + e.message;
      });
  }
})();
