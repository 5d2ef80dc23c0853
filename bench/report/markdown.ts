import type { ScenarioResult } from '../scenarios';
import { formatValue, hasRatio, ratio } from './format';
import type { BenchResults } from './types';

export function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

export function scenarioTable(scenario: ScenarioResult): string[] {
  const lines = [`### ${scenario.number}. ${scenario.title}`, ''];
  if (scenario.status === 'skipped') {
    lines.push(`_${scenario.reason ?? 'skipped'}_`, '');
    return lines;
  }
  const names = Object.keys(scenario.rows);
  const base = scenario.rows[scenario.baseline];
  lines.push(`| implementation | ${scenario.metrics.map((m) => cell(m.label)).join(' | ')} |`);
  lines.push(`| --- | ${scenario.metrics.map(() => '---:').join(' | ')} |`);
  for (const name of names) {
    const row = scenario.rows[name];
    const cells = scenario.metrics.map((metric) => {
      const text = formatValue(row[metric.key], metric.unit);
      const r =
        name === scenario.baseline || !hasRatio(metric)
          ? undefined
          : ratio(row[metric.key], base?.[metric.key]);
      return cell(r === undefined ? text : `${text} (${r.toFixed(2)}×)`);
    });
    lines.push(`| ${name === scenario.baseline ? `**${name}**` : name} | ${cells.join(' | ')} |`);
  }
  lines.push('');
  lines.push(`Ratios in parentheses: the implementation's figure ÷ **${scenario.baseline}**'s.`);
  for (const note of scenario.notes) lines.push(`- ${note}`);
  lines.push('');
  return lines;
}

/** bench/results/latest.md: targets first, then one table per scenario, then the settings used. */
export function toMarkdown(results: BenchResults, chartFile: string | undefined): string {
  const { meta } = results;
  const lines = [
    '# nestjs-redlock benchmark',
    '',
    `${meta.startedAt} · scale \`${meta.scale}\` · ${meta.durationSec.toFixed(0)} s · Node ${meta.node} · ` +
      `${meta.platform} · ${meta.cpus} × ${meta.cpuModel} · ${meta.redis} · ${meta.nodes} local nodes · ` +
      `ttl ${meta.ttl} ms · median of ${meta.rounds} interleaved round(s) · load average ` +
      `${meta.loadAverage[0].toFixed(1)} → ${meta.loadAverage[1].toFixed(1)}`,
    '',
  ];
  if (chartFile) lines.push(`![Scenarios 1–3 and 5](${chartFile})`, '');
  lines.push('## Targets', '', '| # | target | measured | met |', '| ---: | --- | --- | :---: |');
  for (const t of results.targets) {
    const met = t.met === null ? '—' : t.met ? 'yes' : '**no**';
    lines.push(`| ${t.scenario} | ${cell(t.target)} | ${cell(t.measured)} | ${met} |`);
  }
  lines.push('', '## Scenarios', '');
  for (const scenario of Object.values(results.scenarios))
    if (scenario) lines.push(...scenarioTable(scenario));
  lines.push('## Implementations and settings', '');
  for (const impl of meta.implementations) lines.push(`- **${impl.name}** (${impl.pkg}): ${impl.settings}`);
  lines.push('');
  return lines.join('\n');
}
