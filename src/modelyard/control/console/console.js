// The modelyard console: reads only the control plane's /api/v1, redraws every 2 s.
"use strict";

const POLL_MS = 2000;
// the view and the model filter live in the URL (#inference?model=ranker): each view has a link
let view = "governance";
let modelFilter = "";
let apiKey = sessionStorage.getItem("modelyard-api-key") || "";

// Elements are built with textContent only: names and error lines are data, never markup.
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

class AuthNeeded extends Error {}

async function api(path, options) {
  const headers = apiKey ? { "x-api-key": apiKey } : {};
  const response = await fetch(path, { ...(options || {}), headers });
  if (response.status === 401 || response.status === 403) {
    const body = await response.json().catch(() => ({}));
    throw new AuthNeeded(body.error || `HTTP ${response.status}`);
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

const fmt = (value, digits = 1) =>
  value === null || value === undefined ? "–" : Number(value).toFixed(digits);
const badge = (text, cls) => h("span", { class: `badge ${cls || text}` }, text);
const when = (seconds) => new Date(seconds * 1000).toLocaleTimeString();
// a quota's use of one resource: "used of hard", or "used (no limit)"
const usedOf = (pair) => (!pair ? "—" : pair.hard === null || pair.hard === undefined
  ? `${fmt(pair.used, 0)} (no limit)` : `${fmt(pair.used, 0)} of ${fmt(pair.hard, 0)}`);
const viewUrl = (name, model) => `#${name}${model ? `?model=${encodeURIComponent(model)}` : ""}`;
const shown = (model) => !modelFilter || String(model || "").toLowerCase().includes(modelFilter.toLowerCase());
// a link to another view that does not also trigger the row it sits in
const viewLink = (name, model, cls, text) =>
  h("a", { href: viewUrl(name, model), class: cls, "data-model": model, onclick: (event) => event.stopPropagation() }, text);

// ---- charts ---------------------------------------------------------------

function chartText(x, y, text, attrs) {
  const node = svg("text", { x, y, "font-size": 9, fill: "#5a6577", ...(attrs || {}) });
  node.textContent = text;
  return node;
}

// values over wall time: the time axis is labelled at its ends (the first and last poll)
function lineChart(points, series, width = 320, height = 90) {
  const chart = svg("svg", { width, height, class: "chart", viewBox: `0 0 ${width} ${height}` });
  const values = points.flatMap((p) => series.map((s) => p[s.key])).filter((v) => v !== null && v !== undefined);
  const top = Math.max(1e-9, ...values);
  const bottom = height - 12;  // below: the time axis
  chart.append(svg("line", { x1: 2, y1: bottom, x2: width - 2, y2: bottom, stroke: "#dde2ea" }));
  if (points.length >= 2) {
    const t0 = points[0].t, t1 = points[points.length - 1].t;
    for (const s of series) {
      const coords = points
        .filter((p) => p[s.key] !== null && p[s.key] !== undefined)
        .map((p) => `${((p.t - t0) / Math.max(1e-9, t1 - t0)) * (width - 4) + 2},${bottom - 1 - (p[s.key] / top) * (bottom - 14)}`);
      if (coords.length) chart.append(svg("polyline", { points: coords.join(" "), fill: "none", "stroke-width": 1.5, class: s.cls }));
    }
    chart.append(chartText(2, height - 2, when(t0), { class: "axis-time" }),
      chartText(width - 2, height - 2, when(t1), { class: "axis-time", "text-anchor": "end" }));
  }
  chart.append(chartText(4, 11, `max ${fmt(top, 2)}`, { "font-size": 10 }));
  return chart;
}

function barChart(bounds, counts, width = 320, height = 70) {
  const chart = svg("svg", { width, height, class: "chart", viewBox: `0 0 ${width} ${height}` });
  const used = counts.map((c, i) => [i, c]).filter(([, c]) => c > 0);
  const top = Math.max(1, ...counts);
  const step = (width - 4) / Math.max(1, used.length);
  used.forEach(([index, count], n) => {
    const barHeight = (count / top) * (height - 16);
    chart.append(svg("rect", { x: 2 + n * step, y: height - 14 - barHeight, width: Math.max(2, step - 3), height: barHeight, class: "bar-compute" }));
    const label = svg("text", { x: 2 + n * step, y: height - 3, "font-size": 9, fill: "#5a6577" });
    label.textContent = index < bounds.length ? `≤${bounds[index]}` : `>${bounds[bounds.length - 1]}`;
    chart.append(label);
  });
  return chart;
}

function queueVsCompute(queueMs, computeMs, width = 320) {
  const total = Math.max(1e-9, (queueMs || 0) + (computeMs || 0));
  const q = ((queueMs || 0) / total) * width;
  return svg("svg", { width, height: 14, class: "chart" },
    svg("rect", { x: 0, y: 0, width: q, height: 14, class: "bar-queue" }),
    svg("rect", { x: q, y: 0, width: width - q, height: 14, class: "bar-compute" }));
}

// ---- views ----------------------------------------------------------------

function rulesBlock(rules) {
  if (!rules || !rules.current) return h("p", { class: "muted rules" }, "no central rules: each instance enforces its local service file, if any");
  const current = rules.current;
  return h("div", { class: "rules", "data-revision": current.revision },
    h("p", {}, `central revision ${current.revision} by ${current.author} at ${when(current.time)} — ${current.action}`),
    h("pre", { class: "rules-document" }, current.document),
    h("table", { class: "rules-history" },
      h("tr", {}, ["revision", "when", "who", "what", "diff"].map((t) => h("th", {}, t))),
      rules.history.slice().reverse().map((r) => h("tr", { class: "rules-revision", "data-revision": r.revision },
        h("td", {}, r.revision), h("td", {}, when(r.time)), h("td", {}, r.author), h("td", {}, r.action),
        h("td", {}, h("details", {}, h("summary", {}, "diff"), h("pre", {}, r.diff || "")))))));
}

// each gateway process as the supervisor keeps it: health, restarts, last exit, and its own
// counters (calls it forwarded; refusals it handed on, which the instances counted too)
function gatewayTable(processes, totals) {
  if (!processes.length) return null;
  const rows = processes.map((g) => h("tr", { class: "gateway-process", "data-pid": g.pid, "data-state": g.state },
    h("td", {}, g.slot < 0 ? "standby" : `#${g.slot}`),
    h("td", {}, badge(g.up ? (g.state === "standby" ? "standby" : "up") : (g.state === "running" ? "down" : g.state))),
    h("td", {}, g.pid), h("td", { class: "restarts" }, g.restarts), h("td", {}, g.last_exit_text),
    h("td", {}, g.calls ?? "–"),
    h("td", {}, g.refused ? Object.values(g.refused).reduce((a, b) => a + b, 0) : "–")));
  const refused = totals ? Object.values(totals.refused || {}).reduce((a, b) => a + b, 0) : 0;
  return h("div", { class: "gateways" },
    h("table", {}, h("tr", {}, ["gateway", "health", "pid", "restarts", "last exit", "calls", "refused"].map((t) => h("th", {}, t))), rows),
    totals ? h("p", { class: "muted gateway-totals", "data-calls": totals.calls, "data-refused": refused },
      `gateway processes answering: ${totals.processes} · calls ${totals.calls} · answered ${totals.answered} · refusals handed on ${refused}`) : null);
}

const mb = (bytes) => `${(bytes / 1048576).toFixed(1)} MB`;

// an instance that keeps its models within a budget: what it holds against it, and which
function residencyCell(residency) {
  if (!residency) return h("span", { class: "muted" }, "all loaded");
  const resident = Object.entries(residency.resident).sort((a, b) => b[1] - a[1]);
  return h("span", { title: resident.map(([m, b]) => `${m} ${mb(b)}`).join("\n") },
    `${mb(residency.held_bytes)} of ${mb(residency.budget_bytes)} · ${resident.length} resident`);
}

// per model, the instances of the group that hold it now (only where residency is on)
function copiesLine(instances) {
  const holders = {};
  for (const i of instances) {
    for (const model of Object.keys((i.live.residency || {}).resident || {})) {
      (holders[model] = holders[model] || []).push(i.name);
    }
  }
  const models = Object.keys(holders).sort();
  if (!models.length) return null;
  return h("p", { class: "copies muted" }, "copies: ",
    models.map((m) => h("span", { class: "model-copies", "data-model": m, title: holders[m].join("\n") }, `${m} ×${holders[m].length} `)));
}

async function drawGovernance() {
  const [overview, governance] = await Promise.all([api("/api/v1/overview"), api("/api/v1/governance")]);
  const rulesByService = Object.fromEntries(await Promise.all(overview.services.map(async (s) =>
    [s.name, await api(`/api/v1/rules/${encodeURIComponent(s.name)}`)])));
  const root = h("div", {});
  for (const service of overview.services) {
    const gov = governance.services[service.name] || { admitted: {}, rejected: {}, breakers: [], series: {}, recent: [] };
    const card = h("div", { class: "card service", "data-service": service.name },
      h("h2", {}, service.name, " ", h("span", { class: "muted" }, `quota ${service.quota} · data centres ${service.data_centers.join(", ")}`)),
      service.gateway ? h("p", {}, "gateway ", h("code", {}, `http://${service.gateway.http}`),
        h("span", { class: "muted" }, ` · ${(service.gateways || []).filter((g) => g.slot >= 0).length} process(es) on the port`)) : null,
      gatewayTable(service.gateways || [], gov.gateway));
    for (const group of service.groups.filter((g) => !modelFilter || g.models.some(shown))) {
      const rows = group.instances.map((i) =>
        h("tr", { class: "instance", "data-instance": i.name },
          h("td", {}, i.name),
          h("td", {}, badge(i.alive && i.live.up ? "up" : "down")),
          h("td", {}, i.http), h("td", {}, i.data_center), h("td", {}, i.queue), h("td", {}, i.spec),
          h("td", {}, i.role), h("td", {}, fmt(i.weight, 2)), h("td", {}, i.live.in_flight ?? "–"),
          h("td", { class: "residency" }, residencyCell(i.live.residency))));
      card.append(h("div", { class: "group", "data-group": group.key },
        h("h3", {}, `group ${group.name} `, badge(group.release.state), " ",
          h("span", { class: "muted" }, `${group.cards} card(s) · models ${group.models.join(", ")}`)),
        h("table", {}, h("tr", {}, ["instance", "health", "address", "dc", "queue", "spec", "role", "weight", "in flight", "memory (residency)"].map((t) => h("th", {}, t))), rows),
        copiesLine(group.instances)));
    }
    // health is the control plane's own polling: not traffic worth a row
    const interfaces = new Set([...Object.keys(gov.admitted), ...Object.keys(gov.rejected), ...service.interfaces]);
    interfaces.delete("health");
    const ifaceRows = [...interfaces].sort().map((iface) => {
      const points = (gov.series || {})[iface] || [];
      const last = points[points.length - 1] || { admitted_per_s: null, rejected_per_s: {} };
      const rejected = gov.rejected[iface] || {};
      return h("tr", { class: "interface", "data-interface": iface },
        h("td", {}, iface),
        h("td", {}, fmt(last.admitted_per_s), " /s"),
        h("td", {}, gov.admitted[iface] || 0),
        h("td", {}, Object.keys(rejected).length
          ? Object.entries(rejected).map(([rule, count]) => h("div", { class: "rejection-rule", "data-rule": rule }, `${rule}: ${count}`))
          : h("span", { class: "muted" }, "none")),
        h("td", {}, lineChart(points.map((p) => ({ t: p.t, admitted: p.admitted_per_s, rejected: Object.values(p.rejected_per_s || {}).reduce((a, b) => a + b, 0) })),
          [{ key: "admitted", cls: "line-rate" }, { key: "rejected", cls: "line-p99" }], 240, 50)));
    });
    card.append(h("h3", {}, "interfaces ", h("span", { class: "muted counted-since" },
        gov.counted_since ? `counted since ${when(gov.counted_since)}, across rule changes` : "")),
      h("table", {}, h("tr", {}, ["interface", "rate", "admitted", "rejections by rule", "admitted / rejected per s"].map((t) => h("th", {}, t))), ifaceRows));
    card.append(h("h3", {}, "circuit breakers"), gov.breakers.length
      ? h("table", {}, gov.breakers.map((b) => h("tr", { class: "breaker", "data-rule": b.rule },
          h("td", {}, b.rule), h("td", {}, b.interface || "*"), h("td", {}, b.model || "*"), h("td", {}, badge(b.state)), h("td", { class: "muted" }, b.instance))))
      : h("p", { class: "muted" }, "no breaker rules"));
    card.append(h("h3", {}, "rules and their history"), rulesBlock(rulesByService[service.name]));
    // alike rejections are one row with their count; a row opens its newest, its model links
    // to the model's card on the inference map
    const grouped = (gov.grouped || []).filter((g) => shown(g.model));
    // the groups are read from the instances now, the total at the collector's last poll
    card.append(h("h3", {}, `recent rejections, alike ones grouped (${gov.rejections_total || 0} counted at the last poll) — click one for its rule and where to change it`),
      grouped.length
        ? h("table", { class: "rejections" },
            h("tr", {}, ["newest", "rule", "interface", "model", "status", "count", "since"].map((t) => h("th", {}, t))),
            grouped.slice(0, 15).map((g) => h("tr", { class: "rejection", "data-request-id": g.request_id, "data-rule": g.rule, "data-count": g.count, onclick: () => showRejection(service.name, g.request_id) },
              h("td", {}, when(g.newest)), h("td", {}, g.rule), h("td", {}, g.interface),
              h("td", {}, g.model ? viewLink("inference", g.model, "model-link", g.model) : ""), h("td", {}, g.code),
              h("td", { class: "count" }, `×${g.count}`), h("td", { class: "muted" }, g.count > 1 ? when(g.oldest) : ""))))
        : h("p", { class: "muted" }, modelFilter ? `none for models matching '${modelFilter}'` : "none"));
    root.append(card);
  }
  document.getElementById("governance").replaceChildren(root);
}

async function showRejection(service, requestId) {
  const panel = document.getElementById("rejection-detail");
  document.getElementById("rejection-id").textContent = requestId;
  document.getElementById("rejection-line").textContent = "loading…";
  document.getElementById("rejection-explanation").replaceChildren();
  panel.hidden = false;
  try {
    const answer = await api(`/api/v1/rejections/${encodeURIComponent(service)}/${encodeURIComponent(requestId)}`);
    document.getElementById("rejection-line").textContent = answer.record.line;
    document.getElementById("rejection-explanation").replaceChildren(
      ...Object.entries(answer.explanation).map(([label, text]) => h("tr", { "data-row": label }, h("th", {}, label), h("td", {}, text))));
  } catch (error) {
    document.getElementById("rejection-line").textContent = String(error.message || error);
  }
}

// each model's recent rejections by rule, from every service's grouped rejections
function rejectionsByModel(governance) {
  const byModel = {};
  for (const service of Object.values(governance.services)) {
    for (const g of service.grouped || []) {
      if (!g.model) continue;
      const rules = (byModel[g.model] = byModel[g.model] || {});
      rules[g.rule] = (rules[g.rule] || 0) + g.count;
    }
  }
  return byModel;
}

async function drawInference() {
  // the rejections are the governance map's: without them the cards still draw
  const [data, governance] = await Promise.all([api("/api/v1/inference"),
    api("/api/v1/governance").catch((error) => { if (error instanceof AuthNeeded) throw error; return { services: {} }; })]);
  const rejections = rejectionsByModel(governance);
  const root = h("div", {});
  for (const instance of data.instances) {
    const models = instance.models.filter((m) => shown(m.name));
    if (modelFilter && !models.length) continue;
    const card = h("div", { class: "card inf-instance", "data-instance": instance.name },
      h("h2", {}, instance.name, " ", badge(instance.up ? "up" : "down"), " ", h("span", { class: "muted" }, instance.http)));
    for (const model of models) {
      const points = model.series || [];
      const refused = Object.entries(rejections[model.name] || {});
      const last = points[points.length - 1] || {};
      card.append(h("div", { class: "inf-model", "data-model": `${model.name}/${model.version}` },
        h("h3", {}, `${model.name} v${model.version} `, badge(model.state), " ",
          h("span", { class: "muted" }, `engine ${model.platform} · device ${(model.devices || []).join(", ") || "cpu"} · ${model.success} ok / ${model.failure} failed · `),
          h("span", { class: "bad-requests muted", "data-count": model.bad_requests || 0 }, `${model.bad_requests || 0} bad inputs (400)`)),
        h("div", { class: "model-rejections" }, refused.length
          ? ["recent rejections: ", ...refused.map(([rule, count]) => viewLink("governance", model.name, "rejection-link", `${rule} ×${count} `))]
          : h("span", { class: "muted" }, "no recent rejections")),
        h("div", { class: "charts" },
          h("div", {}, h("div", { class: "legend" }, `latency p50 ${fmt(last.p50_ms, 2)} ms / p99 ${fmt(last.p99_ms, 2)} ms`), lineChart(points, [{ key: "p50_ms", cls: "line-p50" }, { key: "p99_ms", cls: "line-p99" }])),
          h("div", {}, h("div", { class: "legend" }, `requests ${fmt(last.requests_per_s)} /s`), lineChart(points, [{ key: "requests_per_s", cls: "line-rate" }])),
          h("div", {}, h("div", { class: "legend" }, "batch sizes"), barChart(model.batch_size.bounds, model.batch_size.counts)),
          h("div", { class: "queue-compute" }, h("div", { class: "legend" }, `queue ${fmt(last.queue_ms, 3)} ms vs compute ${fmt(last.compute_ms, 3)} ms`), queueVsCompute(last.queue_ms, last.compute_ms)))));
    }
    root.append(card);
  }
  if (!root.childElementCount) root.append(h("p", { class: "muted" }, `no model matches '${modelFilter}'`));
  document.getElementById("inference").replaceChildren(root);
}

function recoveryCard(recoveries, lost, groupShown) {
  const pct = (v) => `${Math.round(v * 100)} %`;
  const lostPlaces = Object.entries(lost);
  return h("div", { class: "card" },
    h("h3", {}, "disaster recovery: losing one data centre"),
    lostPlaces.length ? h("p", { id: "lost-places", class: "down" }, "declared lost: ",
      lostPlaces.map(([place, why]) => `${place} (since ${why.at}, ${why.how})`).join("; ")) : null,
    h("table", { id: "dr-table" }, h("tr", {}, ["lost", "group", "state", "instances lost", "replaced", "capacity", "peak in flight", "held after"].map((t) => h("th", {}, t))),
      recoveries.flatMap((r) => r.groups.filter((g) => groupShown(`${g.service}/${g.group}`)).map((g) => h("tr", { class: "dr-row", "data-lose": r.lose, "data-group": `${g.service}/${g.group}` },
        h("td", {}, r.lose), h("td", {}, `${g.service}/${g.group}`), h("td", {}, badge(g.state)),
        h("td", {}, `${g.lost_instances} of ${g.instances}`), h("td", {}, g.replaced), h("td", {}, pct(g.capacity)),
        h("td", {}, g.observed_peak_in_flight ?? "—"), h("td", {}, g.in_flight_held_after ?? "—"))))));
}

async function drawLedger() {
  const [ledger, autoscale, recovery] = await Promise.all([api("/api/v1/ledger"), api("/api/v1/autoscale"), api("/api/v1/dr")]);
  // the model filter keeps the groups that serve a matching model (the quota tables stay whole)
  const groupShown = (key) => !modelFilter || ((ledger.groups || []).find((g) => g.key === key)?.models || []).some(shown);
  const root = h("div", {});
  root.append(h("div", { class: "card" },
    h("h2", {}, `cards ${ledger.total_cards} · instances ${ledger.instances} · GPU instances ${ledger.gpu_instances}`),
    h("table", { id: "quota-table" }, h("tr", {}, ["quota", "data centre", "GPU model", "hard", "used", "reserved", "free"].map((t) => h("th", {}, t))),
      ledger.quota.map((r) => h("tr", { class: "quota-row" }, [r.quota, r.data_center, r.gpu_model, r.hard, r.used, r.reserved, r.free].map((v) => h("td", {}, v))))),
    h("h3", {}, "quotas: owner, cores and memory (used of hard)"),
    h("table", { id: "quota-owners" }, h("tr", {}, ["quota", "owner", "CPU cores", "memory GB"].map((t) => h("th", {}, t))),
      (ledger.quotas || []).map((q) => h("tr", { class: "quota-owner", "data-quota": q.quota },
        h("td", {}, q.quota),
        h("td", {}, Object.entries(q.owner || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "—"),
        h("td", { class: "quota-cpu" }, usedOf(q.cpu_cores)), h("td", { class: "quota-memory" }, usedOf(q.memory_gb))))),
    h("h3", {}, "cards and instances by group"),
    h("table", { id: "group-cards" }, h("tr", {}, ["group", "cards (spec)", "card share", "running instances", "GPU instances", "cards running"].map((t) => h("th", {}, t))),
      Object.entries(ledger.cards_by_group).filter(([group]) => groupShown(group)).map(([group, cards]) => {
        const running = ledger.running_by_group[group] || { instances: 0, gpu_instances: 0, cards: 0 };
        const share = ((ledger.groups || []).find((g) => g.key === group) || {}).cards_share;
        return h("tr", { class: "group-cards", "data-group": group }, h("td", {}, group), h("td", {}, cards),
          h("td", { class: "card-share" }, share ?? "—"), h("td", {}, running.instances), h("td", {}, running.gpu_instances), h("td", {}, running.cards));
      }))));
  root.append(recoveryCard(recovery.places, recovery.lost || {}, groupShown));
  const groups = ledger.groups.filter((g) => groupShown(g.key));
  if (modelFilter && !groups.length) root.append(h("p", { class: "muted" }, `no group serves a model matching '${modelFilter}'`));
  for (const group of groups) {
    const release = group.release;
    const scalings = autoscale.groups.filter((g) => g.group === group.key);
    root.append(h("div", { class: "card ledger-group", "data-group": group.key },
      h("h2", {}, group.key, " ", h("span", { class: "release-state" }, badge(release.state)),
        release.percent !== undefined ? ` ${release.percent} % new` : "",
        release.group_revision ? h("span", { class: "muted" }, ` group revision ${release.group_revision}`) : ""),
      scalings.map((scaling) => h("p", { class: "autoscale", "data-template": scaling.template },
        `autoscaling ${scaling.template} ${scaling.mode}: ${scaling.rule.min}–${scaling.rule.max} replicas, target ${scaling.rule.target_in_flight} in flight; `,
        h("span", { class: "muted" }, scaling.decisions.length ? scaling.decisions[scaling.decisions.length - 1].explain : "no decision yet"))),
      h("h3", {}, "event record"),
      group.events.length
        ? h("table", { class: "events" }, group.events.slice().reverse().map((e) => h("tr", { class: "event", "data-action": e.action },
            h("td", {}, e.at), h("td", {}, e.action), h("td", {}, e.actor), h("td", {}, JSON.stringify(e.to)), h("td", { class: "muted" }, JSON.stringify(e.numbers)))))
        : h("p", { class: "muted" }, "no events")));
  }
  document.getElementById("ledger").replaceChildren(root);
}

const DRAW = { governance: drawGovernance, inference: drawInference, ledger: drawLedger };

async function refresh() {
  const status = document.getElementById("status");
  try {
    await DRAW[view]();
    document.getElementById("auth-form").hidden = true;
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
    status.dataset.updated = String(Date.now());
  } catch (error) {
    if (error instanceof AuthNeeded) {
      document.getElementById("auth-form").hidden = false;
      document.getElementById("auth-error").textContent = apiKey ? error.message : "";
      status.textContent = "needs an API key";
    } else {
      status.textContent = `error: ${error.message || error}`;
    }
  }
}

function showFromUrl() {
  const [name, query] = location.hash.replace(/^#\/?/, "").split("?");
  view = Object.hasOwn(DRAW, name) ? name : "governance";
  modelFilter = new URLSearchParams(query || "").get("model") || "";
  document.getElementById("model-filter").value = modelFilter;
  document.querySelectorAll("nav button").forEach((b) => b.classList.toggle("active", b.dataset.view === view));
  document.querySelectorAll(".view").forEach((section) => { section.hidden = section.id !== `view-${view}`; });
  refresh();
}

document.querySelectorAll("nav button").forEach((button) =>
  button.addEventListener("click", () => { location.hash = viewUrl(button.dataset.view, modelFilter); }));
document.getElementById("model-filter").addEventListener("change", (event) => {
  location.hash = viewUrl(view, event.target.value.trim());
});
window.addEventListener("hashchange", showFromUrl);
document.getElementById("auth-form").addEventListener("submit", (event) => {
  event.preventDefault();
  apiKey = document.getElementById("api-key").value.trim();
  sessionStorage.setItem("modelyard-api-key", apiKey);
  refresh();
});
document.getElementById("rejection-close").addEventListener("click", () => { document.getElementById("rejection-detail").hidden = true; });

showFromUrl();
setInterval(refresh, POLL_MS);
