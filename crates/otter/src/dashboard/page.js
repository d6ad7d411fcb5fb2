"use strict";
// The otter dashboard: polls the node's JSON endpoints every second and redraws.
// Every text from the node is put in with textContent, never as HTML.
(function () {
  const REFRESH_MS = 1000;
  const token = new URLSearchParams(location.search).get("token");
  const COLORS = ["#2452b5", "#2f8f5b", "#b3261e", "#8a5a00", "#6a3fb5", "#008b8b", "#c2185b", "#5d6b00"];
  let sort = "queue";
  let detailId = null;

  function api(path, options) {
    const init = Object.assign({ headers: {} }, options || {});
    if (token) init.headers["Authorization"] = "Bearer " + token;
    return fetch(path, init).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body.error || r.statusText);
        return body;
      });
    });
  }

  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "cls") e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }

  function pidLink(pid, id) {
    const a = el("a", { cls: "pid", text: pid, href: "#" + id });
    a.addEventListener("click", function (ev) { ev.preventDefault(); openDetail(id); });
    return a;
  }

  function kindTag(kind) { return el("span", { cls: "kind kind-" + kind, text: kind }); }

  function bytes(n) {
    if (n < 1024) return n + " B";
    if (n < 1048576) return (n / 1024).toFixed(1) + " KiB";
    return (n / 1048576).toFixed(1) + " MiB";
  }

  // ===== overview and plots =====

  function plot(svg, series, max, uptimes) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const W = 600, H = 160, n = uptimes.length;
    const ns = "http://www.w3.org/2000/svg";
    for (let g = 1; g < 4; g++) {
      const line = document.createElementNS(ns, "line");
      line.setAttribute("x1", 0); line.setAttribute("x2", W);
      line.setAttribute("y1", H * g / 4); line.setAttribute("y2", H * g / 4);
      line.setAttribute("stroke", "#e4e7ec");
      svg.appendChild(line);
    }
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", 4); label.setAttribute("y", 12);
    label.setAttribute("font-size", "11"); label.setAttribute("fill", "#556");
    label.textContent = "max " + max + ", last " + Math.round(n) + " s";
    svg.appendChild(label);
    if (n < 2) return;
    series.forEach(function (values, i) {
      let d = "";
      values.forEach(function (v, j) {
        if (v === null) return;
        const x = (j / (n - 1)) * W;
        const y = H - Math.min(v / max, 1) * (H - 16);
        d += (d === "" ? "M" : "L") + x.toFixed(1) + "," + y.toFixed(1);
      });
      const path = document.createElementNS(ns, "path");
      path.setAttribute("d", d);
      path.setAttribute("fill", "none");
      path.setAttribute("stroke", COLORS[i % COLORS.length]);
      path.setAttribute("stroke-width", "1.5");
      svg.appendChild(path);
    });
  }

  function drawOverview(o) {
    const e = o.exits;
    document.getElementById("summary").textContent =
      o.processes + " processes · " + o.spawns + " spawned · exits: " + e.normal + " normal, " +
      e.shutdown + " shutdown, " + e.killed + " killed, " + e.panic + " panic, " + e.error + " error · " +
      "up " + Math.round(o.uptime_ms / 1000) + " s";
    const h = o.history;
    const util = h.workers.map(function (w) { return w.utilisation; });
    const runq = h.workers.map(function (w) { return w.run_queue; });
    let maxq = 1;
    runq.forEach(function (s) { s.forEach(function (v) { if (v !== null && v > maxq) maxq = v; }); });
    plot(document.getElementById("plot-utilisation"), util, 1, h.uptime_ms);
    plot(document.getElementById("plot-run-queue"), runq, maxq, h.uptime_ms);
    const legend = document.getElementById("legend");
    while (legend.firstChild) legend.removeChild(legend.firstChild);
    o.workers.forEach(function (w) {
      const sw = el("i"); sw.style.background = COLORS[w.index % COLORS.length];
      const last = h.workers[w.index] ? h.workers[w.index].utilisation.slice(-1)[0] : null;
      const pct = last === null || last === undefined ? "–" : Math.round(last * 100) + "%";
      legend.appendChild(el("span", {}, [sw, document.createTextNode(
        (w.spare ? "spare " : "worker ") + w.index + ": " + pct + ", queue " + w.run_queue +
        ", " + w.steals + " steals, " + w.parks + " parks")]));
    });
  }

  // ===== the tree =====

  function treeNode(n) {
    const label = el("span", {}, [pidLink(n.pid, n.id), n.name ? el("b", { text: " " + n.name }) : null, kindTag(n.kind)]);
    const li = el("li", { "data-pid": n.pid }, [label]);
    if (n.children.length || n.more) {
      const ul = el("ul");
      n.children.forEach(function (c) { ul.appendChild(treeNode(c)); });
      if (n.more) ul.appendChild(el("li", { cls: "more", text: "… and " + n.more + " more" }));
      li.appendChild(ul);
    }
    return li;
  }

  function drawTree(t) {
    const root = document.getElementById("tree");
    while (root.firstChild) root.removeChild(root.firstChild);
    if (!t.roots.length) { root.appendChild(el("p", { cls: "more", text: "no supervisor" })); return; }
    const ul = el("ul");
    t.roots.forEach(function (n) { ul.appendChild(treeNode(n)); });
    root.appendChild(ul);
  }

  // ===== the top table =====

  function num(v, delta) {
    const td = el("td", { cls: "num", text: String(v) });
    if (delta !== undefined) td.appendChild(el("span", { cls: "delta", text: "+" + delta }));
    return td;
  }

  function drawTop(p) {
    document.getElementById("top-note").textContent =
      "of " + p.total + " · by " + p.sort + (p.interval_ms ? " · Δ over " + p.interval_ms + " ms" : "") +
      " · snapshot " + (p.age_ms / 1000).toFixed(1) + " s old (walk " + (p.walk_us / 1000).toFixed(1) + " ms)";
    const body = document.querySelector("#top tbody");
    while (body.firstChild) body.removeChild(body.firstChild);
    p.rows.forEach(function (r) {
      body.appendChild(el("tr", { "data-pid": r.pid }, [
        el("td", {}, [pidLink(r.pid, r.id)]),
        el("td", { text: r.name || "" }),
        el("td", {}, [kindTag(r.kind)]),
        el("td", { text: r.status }),
        num(r.queue), num(r.polls, r.polls_delta), num(r.received, r.received_delta), el("td", { cls: "num", text: bytes(r.memory) }),
      ]));
    });
    document.querySelectorAll("#top th.sortable").forEach(function (th) {
      th.classList.toggle("sorted", th.getAttribute("data-sort") === sort);
    });
  }

  document.querySelectorAll("#top th.sortable").forEach(function (th) {
    th.addEventListener("click", function () { sort = th.getAttribute("data-sort"); refresh(); });
  });

  // ===== a process's detail =====

  function row(dl, k, v) { dl.appendChild(el("dt", { text: k })); dl.appendChild(el("dd", {}, [v])); }
  function txt(s) { return document.createTextNode(String(s)); }
  function pids(list) {
    const span = el("span");
    if (!list.length) span.textContent = "none";
    list.forEach(function (p, i) {
      if (i) span.appendChild(txt(" "));
      span.appendChild(pidLink(p, p.replace(/[<>]/g, "")));
    });
    return span;
  }

  function drawDetail(d) {
    document.getElementById("detail-pid").textContent = d.pid + (d.name ? " " + d.name : "");
    const box = document.getElementById("detail");
    while (box.firstChild) box.removeChild(box.firstChild);
    const dl = el("dl");
    row(dl, "kind", kindTag(d.kind));
    row(dl, "status", txt(d.status));
    row(dl, "queue", txt(d.queue));
    row(dl, "received", txt(d.received));
    row(dl, "polls", txt(d.polls));
    row(dl, "memory", txt(bytes(d.memory.total) + " (cell " + d.memory.cell + ", mailbox " + d.memory.mailbox + ", bonds " + d.memory.bonds + ", saved " + d.memory.saved + ")"));
    row(dl, "links", pids(d.links));
    row(dl, "monitors", pids(d.monitors));
    row(dl, "monitored by", pids(d.monitored_by));
    row(dl, "trap_exit", txt(d.trap_exit));
    row(dl, "parent", d.parent ? pids([d.parent]) : txt("none"));
    row(dl, "supervisor", d.supervisor ? pids([d.supervisor]) : txt("none"));
    row(dl, "spawned at", txt((d.spawned_at_ms / 1000).toFixed(3) + " s"));
    row(dl, "restarts", txt(d.restarts));
    if (d.sys.unavailable) row(dl, "sys", txt(d.sys.unavailable));
    if (d.sys.behaviour) {
      row(dl, "behaviour", txt(d.sys.behaviour + " (" + d.sys.mode + ")"));
      row(dl, "state", el("pre", { text: d.sys.state }));
    }
    if (d.sys.log) {
      if (d.sys.log.length === 0) {
        row(dl, "last messages", txt("not logged (otter::sys::log turns it on)"));
      } else {
        const ol = el("ol", { cls: "log" });
        d.sys.log.forEach(function (e) {
          const t = new Date(e.at_ms).toISOString().slice(11, 23);
          ol.appendChild(el("li", { text: t + " " + (e.direction === "in" ? "got " : "sent ") + e.kind + " (" + e.message + ")" }));
        });
        row(dl, "last messages", ol);
      }
    }
    if (d.sys.children) {
      const ul = el("ul");
      d.sys.children.forEach(function (c) {
        ul.appendChild(el("li", {}, [txt(c.id + " (" + c.kind + "): "), c.pid ? pidLink(c.pid, c.pid.replace(/[<>]/g, "")) : txt("not running")]));
      });
      row(dl, "children", ul);
    }
    box.appendChild(dl);
    if (d.allow_kill) {
      const b = el("button", { cls: "kill", type: "button", text: "kill " + d.pid });
      b.addEventListener("click", function () {
        api("/api/process/" + d.id + "/kill", { method: "POST", headers: { "X-Otter-Dashboard": "kill" } })
          .then(refresh, showError);
      });
      box.appendChild(b);
    }
  }

  function openDetail(id) {
    detailId = id;
    document.getElementById("detail-panel").hidden = false;
    refresh();
  }

  document.getElementById("detail-close").addEventListener("click", function () {
    detailId = null;
    document.getElementById("detail-panel").hidden = true;
  });

  // ===== problems: stuck processes and deadlocks =====

  function drawProblems(p) {
    const box = document.getElementById("problems");
    box.textContent = "";
    if (p.stuck.length === 0 && p.deadlocks.length === 0) {
      box.textContent = "none";
      return;
    }
    p.stuck.forEach(function (s) {
      box.appendChild(el("div", { cls: "problem stuck" }, [
        el("b", { text: "stuck " }), pidLink(s.pid, s.id),
        txt(" has held worker " + s.worker + " in one poll for " + s.ms + " ms"),
      ]));
    });
    p.deadlocks.forEach(function (cycle) {
      const parts = [el("b", { text: "deadlock " })];
      cycle.concat([cycle[0]]).forEach(function (c, i) {
        if (i > 0) parts.push(txt(" calls "));
        parts.push(pidLink(c.pid, c.id));
      });
      box.appendChild(el("div", { cls: "problem deadlock" }, parts));
    });
  }

  // ===== the refresh =====

  function showError(e) { document.getElementById("error").textContent = e ? String(e.message || e) : ""; }

  let busy = false;
  function refresh() {
    if (busy) return;
    busy = true;
    // One request after another: each walk of the table serves the rest (SNAPSHOT_MAX_AGE).
    api("/api/overview").then(drawOverview)
      .then(function () { return api("/api/processes?sort=" + sort + "&limit=20"); }).then(drawTop)
      .then(function () { return api("/api/tree"); }).then(drawTree)
      .then(function () { return api("/api/problems"); }).then(drawProblems)
      .then(function () {
        if (detailId === null) return;
        return api("/api/process/" + detailId).then(drawDetail, function (e) {
          document.getElementById("detail").textContent = String(e.message || e);
        });
      })
      .then(function () { showError(null); }, showError)
      .then(function () { busy = false; });
  }

  // A link to a process's detail: `/#0.I.G`.
  if (location.hash.length > 1) openDetail(location.hash.slice(1));
  else refresh();
  setInterval(refresh, REFRESH_MS);
})();
