// The episode timeline: each episode's activation over time, computed from
// its traces the way the core does (src/state/activation.rs): activation(t) =
// Σ strength ÷ √(minutes since the trace), the age floored at one minute,
// over the episode's yes-traces made by t. Drawn on a shared time axis with a
// logarithmic activation scale, over a band coloured by the episode's state.

import { svg, h, short } from "./dom.js";

const MINUTE = 60_000;
/** Width and height of one curve's SVG coordinate space. */
const W = 1000;
const H = 60;
/** Height of the state band under the curve. */
const BAND = 8;
/** Lowest activation drawn (log scale floor). */
const FLOOR = 1e-3;

/** Activation at `t` from `traces` (yes-traces made at or before `t`). */
export function activationAt(traces, t) {
  let a = 0;
  for (const tr of traces) {
    if (!tr.yes || tr.at > t) continue;
    a += tr.strength / Math.sqrt(Math.max(1, (t - tr.at) / MINUTE));
  }
  return a;
}

/**
 * Times to sample a curve at: an even grid over [t0, t1] and, around each
 * trace, the moments its spike rises and decays (a grid alone misses them).
 */
function sampleTimes(traces, t0, t1, n = 180) {
  const times = new Set();
  for (let i = 0; i <= n; i++) times.add(t0 + ((t1 - t0) * i) / n);
  for (const tr of traces) {
    for (const d of [-1, 0, MINUTE, 5 * MINUTE, 30 * MINUTE, 3 * 60 * MINUTE, 12 * 60 * MINUTE]) {
      const t = tr.at + d;
      if (t >= t0 && t <= t1) times.add(t);
    }
  }
  return [...times].sort((a, b) => a - b);
}

/** State of an episode at `t` from its history (`[{ state, at }]`, in order). */
function stateAt(history, t) {
  let state = null;
  for (const change of history) if (change.at <= t) state = change.state;
  return state;
}

/**
 * The scale shared by every row: `{ t0, t1, max }` (max activation drawn,
 * at least 1).
 */
export function scaleFor(episodes, tracesByEpisode, t0, t1) {
  let max = 1;
  for (const e of episodes) {
    for (const tr of tracesByEpisode.get(e.id) ?? []) if (tr.yes) max = Math.max(max, activationAt(tracesByEpisode.get(e.id), tr.at));
  }
  return { t0, t1: Math.max(t1, t0 + MINUTE), max };
}

/** One episode's curve as an SVG element; `data-end` holds the computed activation at t1. */
export function curve(episode, traces, scale) {
  const { t0, t1, max } = scale;
  const x = (t) => (((t - t0) / (t1 - t0)) * W).toFixed(1);
  const top = H - BAND - 2;
  const lo = Math.log10(FLOOR);
  const hi = Math.log10(max);
  const y = (a) => (top - ((Math.log10(Math.max(a, FLOOR)) - lo) / (hi - lo)) * (top - 2)).toFixed(1);
  const yes = traces.filter((t) => t.yes);
  const born = Math.min(episode.formed_at, ...yes.map((t) => t.at));
  const start = Math.max(t0, born);

  const points = sampleTimes(yes, start, t1).map((t) => `${x(t)},${y(activationAt(yes, t))}`);
  const line = `M${points.join(" L")}`;
  const area = `${line} L${x(t1)},${top} L${x(start)},${top} Z`;

  // State band: one rectangle per stretch of one state.
  const band = [];
  const changes = [...episode.history].sort((a, b) => a.at - b.at);
  const edges = [start, ...changes.map((c) => c.at).filter((t) => t > start && t < t1), t1];
  for (let i = 0; i + 1 < edges.length; i++) {
    const state = stateAt(changes, edges[i]) ?? "live";
    const x0 = Number(x(edges[i]));
    band.push(svg("rect", { x: x0, y: H - BAND, width: Math.max(1, Number(x(edges[i + 1])) - x0), height: BAND, class: `band ${state}` }));
  }
  // A tick per trace: the encoding trace, traces of facts, recall traces.
  const ticks = yes.map((tr) =>
    svg("line", { x1: x(tr.at), x2: x(tr.at), y1: top, y2: top - 6, class: `tick ${tr.cause?.kind ?? "fact"}` }),
  );
  const end = activationAt(yes, t1);
  const el = svg(
    "svg",
    { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", class: "curve", role: "img", "aria-label": `activation of episode ${episode.id}` },
    svg("path", { d: area, class: "area" }),
    svg("path", { d: line, class: "line", "vector-effect": "non-scaling-stroke" }),
    ...ticks,
    ...band,
  );
  el.dataset.end = String(end);
  return el;
}

/** The time axis labels over the curves (HTML, positioned in %). */
export function axis(scale) {
  const { t0, t1 } = scale;
  const day = 24 * 60 * MINUTE;
  const spanMs = t1 - t0;
  const hour = 60 * MINUTE;
  // At most about six labels: the shortest step that gives no more.
  const steps = [hour, 3 * hour, 6 * hour, 12 * hour, day, 2 * day, 7 * day, 14 * day, 28 * day, 91 * day, 365 * day];
  const step = steps.find((s) => spanMs / s <= 6) ?? steps.at(-1);
  const labels = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    const left = ((t - t0) / spanMs) * 100;
    if (left > 84) break;
    labels.push(h("span", { style: `left:${left.toFixed(2)}%` }, step >= day ? short(t).replace(/ 00:00$/, "") : short(t)));
  }
  labels.push(h("span", { class: "now", style: "right:0" }, "now"));
  return labels;
}
