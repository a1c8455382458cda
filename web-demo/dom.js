// Small DOM and formatting helpers of the demo (no framework).

/**
 * Makes an element: `h("li", { class: "x", dataset: { testid: "y" } }, child, ...)`.
 * Children are nodes, strings (as text, never HTML), arrays, or null/false (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

/** An SVG element with attributes. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== undefined && value !== null) el.setAttribute(key, String(value));
  for (const c of children) if (c) el.append(c);
  return el;
}

/** The element with `data-testid` `id`. */
export const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);

const pad = (n) => String(n).padStart(2, "0");
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "Tue 4 Mar 2025, 14:00 UTC" (the demo shows every time in UTC, as the sample is written). */
export function when(ms) {
  const d = new Date(ms);
  return `${DAYS[d.getUTCDay()]} ${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}, ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())} UTC`;
}

/** "4 Mar 14:00". */
export function short(ms) {
  const d = new Date(ms);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
}

/** A duration: "3 d 4 h", "2 h 5 min", "40 s". */
export function span(ms) {
  const sign = ms < 0 ? "-" : "";
  let s = Math.round(Math.abs(ms) / 1000);
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const hr = Math.floor(s / 3600);
  s -= hr * 3600;
  const min = Math.floor(s / 60);
  if (d) return `${sign}${d} d${hr ? ` ${hr} h` : ""}`;
  if (hr) return `${sign}${hr} h${min ? ` ${min} min` : ""}`;
  if (min) return `${sign}${min} min`;
  return `${sign}${s} s`;
}

/** A number with few digits: 0.0412, 1.24, 12.5. */
export function num(x) {
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toPrecision(3);
}

/** A download of `text` as `filename`. */
export function download(filename, parts, type = "application/json") {
  const url = URL.createObjectURL(new Blob(Array.isArray(parts) ? parts : [parts], { type }));
  const a = h("a", { href: url, download: filename });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
