import type { ScenarioResult } from '../scenarios';
import { formatValue } from './format';
import type { BenchResults } from './types';

/** Hand-written SVG (no dependencies): scenarios 1–3 as bar charts and scenario 5 as lines, 2 × 2 panels. */

const COLORS: Record<string, string> = {
  'nestjs-redlock': '#e0234e',
  'node-redlock': '#4e79a7',
  'sesamecare-redlock': '#59a14f',
  'redlock-universal': '#f28e2b',
  floor: '#6b6b6b',
  'floor+scripts': '#8f8f8f',
  'floor+autopipelining': '#b5aca4',
  'floor+scripts+autopipelining': '#d4cdc6',
};
const FALLBACK = ['#76b7b2', '#edc948', '#b07aa1', '#9c755f'];

const PANEL_W = 540;
const PANEL_H = 300;
const PAD = { left: 64, right: 16, top: 36, bottom: 44 };
const LEGEND_H = 40;

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function colorOf(name: string, index: number): string {
  return COLORS[name] ?? FALLBACK[index % FALLBACK.length];
}

/** A round upper bound and tick step for an axis starting at 0. */
function niceScale(max: number): { top: number; step: number } {
  if (!(max > 0)) return { top: 1, step: 0.2 };
  const rough = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? 10 * magnitude;
  return { top: Math.ceil(max / step) * step, step };
}

function tickLabel(value: number, step: number): string {
  if (value >= 1000) return `${Math.round(value / 100) / 10}k`;
  const decimals = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
  return value.toFixed(decimals);
}

function axes(x: number, y: number, title: string, unit: string, top: number, step: number): string[] {
  const plotH = PANEL_H - PAD.top - PAD.bottom;
  const plotW = PANEL_W - PAD.left - PAD.right;
  const out = [
    `<text x="${x + PANEL_W / 2}" y="${y + 20}" text-anchor="middle" class="title">${esc(title)}</text>`,
    `<text x="${x + 14}" y="${y + PAD.top + plotH / 2}" text-anchor="middle" class="unit" ` +
      `transform="rotate(-90 ${x + 14} ${y + PAD.top + plotH / 2})">${esc(unit)}</text>`,
  ];
  for (let v = 0; v <= top + step / 2; v += step) {
    const ty = y + PAD.top + plotH - (v / top) * plotH;
    out.push(
      `<line x1="${x + PAD.left}" y1="${ty.toFixed(1)}" x2="${x + PAD.left + plotW}" y2="${ty.toFixed(1)}" class="grid"/>`,
      `<text x="${x + PAD.left - 6}" y="${(ty + 4).toFixed(1)}" text-anchor="end" class="tick">${tickLabel(v, step)}</text>`,
    );
  }
  return out;
}

function barPanel(
  x: number,
  y: number,
  title: string,
  unit: string,
  bars: { name: string; value: number; color: string }[],
): string[] {
  const valid = bars.filter((b) => Number.isFinite(b.value));
  const { top, step } = niceScale(Math.max(0, ...valid.map((b) => b.value)));
  const plotH = PANEL_H - PAD.top - PAD.bottom;
  const plotW = PANEL_W - PAD.left - PAD.right;
  const out = axes(x, y, title, unit, top, step);
  const slot = plotW / Math.max(1, bars.length);
  bars.forEach((bar, i) => {
    const bx = x + PAD.left + i * slot + slot * 0.15;
    const bw = slot * 0.7;
    const value = Number.isFinite(bar.value) ? bar.value : 0;
    const h = (value / top) * plotH;
    const by = y + PAD.top + plotH - h;
    out.push(
      `<rect x="${bx.toFixed(1)}" y="${by.toFixed(1)}" width="${bw.toFixed(1)}" height="${h.toFixed(1)}" fill="${bar.color}"><title>${esc(
        `${bar.name}: ${formatValue(bar.value, unit)}`,
      )}</title></rect>`,
      `<text x="${(bx + bw / 2).toFixed(1)}" y="${(by - 4).toFixed(1)}" text-anchor="middle" class="value">${esc(
        Number.isFinite(bar.value) ? formatValue(bar.value, unit).replace(/ ?(ms|\/s)$/, '') : 'n/a',
      )}</text>`,
    );
  });
  return out;
}

function linePanel(
  x: number,
  y: number,
  title: string,
  unit: string,
  xs: number[],
  series: { name: string; values: number[]; color: string }[],
): string[] {
  const all = series.flatMap((s) => s.values).filter((v) => Number.isFinite(v));
  const { top, step } = niceScale(Math.max(0, ...all));
  const plotH = PANEL_H - PAD.top - PAD.bottom;
  const plotW = PANEL_W - PAD.left - PAD.right;
  const out = axes(x, y, title, unit, top, step);
  const px = (i: number) =>
    x + PAD.left + (xs.length === 1 ? plotW / 2 : (i / (xs.length - 1)) * plotW * 0.92 + plotW * 0.04);
  const py = (v: number) => y + PAD.top + plotH - (v / top) * plotH;
  xs.forEach((n, i) => {
    out.push(
      `<text x="${px(i).toFixed(1)}" y="${y + PANEL_H - PAD.bottom + 16}" text-anchor="middle" class="tick">${n}</text>`,
    );
  });
  out.push(
    `<text x="${x + PAD.left + plotW / 2}" y="${y + PANEL_H - 8}" text-anchor="middle" class="unit">nodes</text>`,
  );
  for (const s of series) {
    const points = s.values
      .map((v, i) => (Number.isFinite(v) ? `${px(i).toFixed(1)},${py(v).toFixed(1)}` : undefined))
      .filter((p): p is string => p !== undefined);
    if (points.length > 1) {
      out.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    }
    for (const p of points) {
      const [cx, cy] = p.split(',');
      out.push(
        `<circle cx="${cx}" cy="${cy}" r="3" fill="${s.color}"><title>${esc(s.name)}</title></circle>`,
      );
    }
  }
  return out;
}

function bars(scenario: ScenarioResult | undefined, metric: string, names: string[]) {
  return names
    .filter((name) => scenario?.rows[name] !== undefined)
    .map((name) => ({
      name,
      value: scenario!.rows[name][metric],
      color: colorOf(name, names.indexOf(name)),
    }));
}

/** bench/results/chart.svg */
export function toSvg(results: BenchResults): string {
  const names = results.meta.implementations.map((impl) => impl.name);
  const s = results.scenarios;
  const width = PANEL_W * 2 + 20;
  const height = LEGEND_H + PANEL_H * 2 + 20;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
      'font-family="system-ui, -apple-system, Segoe UI, sans-serif">',
    '<style>.title{font-size:14px;font-weight:600;fill:#222}.unit{font-size:11px;fill:#555}' +
      '.tick{font-size:10px;fill:#555}.value{font-size:10px;fill:#222}.grid{stroke:#e5e5e5;stroke-width:1}' +
      '.legend{font-size:12px;fill:#222}</style>',
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
  ];
  let lx = 16;
  names.forEach((name, i) => {
    parts.push(
      `<rect x="${lx}" y="14" width="12" height="12" fill="${colorOf(name, i)}"/>`,
      `<text x="${lx + 17}" y="24" class="legend">${esc(name)}</text>`,
    );
    lx += 30 + name.length * 7;
  });
  const scaleScenario = s.scale;
  const counts = (scaleScenario?.metrics ?? [])
    .map((m) => /^p50n(\d+)$/.exec(m.key))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]));
  parts.push(
    ...barPanel(
      10,
      LEGEND_H,
      '1 · Uncontended acquire+release p50 (lower is better)',
      'ms',
      bars(s.uncontended, 'cycleP50', names),
    ),
    ...barPanel(
      PANEL_W + 10,
      LEGEND_H,
      '2 · Throughput: cycles/s, concurrent workers (higher is better)',
      '/s',
      bars(s.throughput, 'opsPerSec', names),
    ),
    ...barPanel(
      10,
      LEGEND_H + PANEL_H,
      '3 · Contention: owner changes/s (higher is better)',
      '/s',
      bars(s.contention, 'ownerChangesPerSec', names),
    ),
    ...linePanel(
      PANEL_W + 10,
      LEGEND_H + PANEL_H,
      '5 · Scale: acquire+release p50 by nodes (lower is better)',
      'ms',
      counts,
      names
        .filter((name) => scaleScenario?.rows[name] !== undefined)
        .map((name) => ({
          name,
          color: colorOf(name, names.indexOf(name)),
          values: counts.map((n) => scaleScenario!.rows[name][`p50n${n}`]),
        })),
    ),
    '</svg>',
  );
  return parts.join('\n') + '\n';
}
