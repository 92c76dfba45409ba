// The monitoring recipe (deploy/monitoring): Prometheus accepts both scrape configurations with
// the rules they load, the rules' own cases pass (`promtool test rules`: each alert fires where it
// should and not in the case beside it), and the jobs the alerts name are the jobs the
// configurations scrape, and docs/operacao.md tells what to do for each. That the metrics named
// exist is test/deploy/queue-metrics.test.ts.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { onThisMachine } from '../helpers/deadline.js';
import { ROOT, read, requireTool, runTool } from './recipes.js';

const MONITORING = 'deploy/monitoring';
/**
 * promtool on every rule and case: 9 to 13 s alone, 11 s in a quiet CI run, 30 s with the machine
 * loaded, and past 47 s (the default limit on a slower machine) inside a full test:completo run on
 * 2 cores (2026-11-29). Each of the three runs gets this much.
 */
const PROMTOOL_CASES_MS = onThisMachine(120_000);
const CONFIGS = ['prometheus.yml', 'prometheus-kubernetes.yml'];

interface ScrapeConfig {
  job_name: string;
  metrics_path?: string;
  authorization?: { type: string; credentials_file: string };
}
interface PrometheusConfig {
  rule_files: string[];
  scrape_configs: ScrapeConfig[];
}
interface RuleFile {
  groups: Array<{ rules: Array<{ alert?: string; record?: string; expr: string }> }>;
}

const config = (file: string) => parse(read(`${MONITORING}/${file}`)) as PrometheusConfig;
const rules = () => (parse(read(`${MONITORING}/alertas.yml`)) as RuleFile).groups.flatMap((g) => g.rules);

let promtool = '';
let dir = '';
beforeAll(async () => {
  promtool = requireTool('promtool');
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-monitoring-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('deploy/monitoring', () => {
  it('promtool check rules accepts alertas.yml', async () => {
    const run = await runTool(promtool, ['check', 'rules', `${MONITORING}/alertas.yml`]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it(
    'every alert fires in its case and stays quiet in the case beside it (promtool test rules)',
    async () => {
      const run = await runTool(promtool, ['test', 'rules', 'alertas.test.yml'], { cwd: path.join(ROOT, MONITORING) });
      expect(run.stdout + run.stderr).toContain('SUCCESS');
      expect(run.code).toBe(0);
      // Each alert has at least one case where it fires.
      const cases = parse(read(`${MONITORING}/alertas.test.yml`)) as {
        tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
      };
      const firing = new Set(
        cases.tests
          .flatMap((t) => t.alert_rule_test ?? [])
          .filter((t) => t.exp_alerts.length > 0)
          .map((t) => t.alertname),
      );
      expect([...firing].sort()).toEqual(
        rules()
          .flatMap((r) => (r.alert ? [r.alert] : []))
          .sort(),
      );
    },
    PROMTOOL_CASES_MS,
  );

  it(
    'the rule cases can fail: an alert with a wrong metric name does not pass them',
    async () => {
      const copy = path.join(dir, 'mutated');
      await mkdir(copy);
      await cp(path.join(ROOT, MONITORING, 'alertas.test.yml'), path.join(copy, 'alertas.test.yml'));
      const original = await readFile(path.join(ROOT, MONITORING, 'alertas.yml'), 'utf8');
      await writeFile(path.join(copy, 'alertas.yml'), original.replace('censo_worker_jobs_total', 'censo_worker_job_total'));
      const run = await runTool(promtool, ['test', 'rules', 'alertas.test.yml'], { cwd: copy });
      expect(run.code).not.toBe(0);
      expect(run.stdout + run.stderr).toContain('CensoWorkerSemJobs');
    },
    PROMTOOL_CASES_MS,
  );

  for (const file of CONFIGS) {
    it(`promtool check config accepts ${file} and the rules it loads`, async () => {
      // A copy whose token files exist (promtool checks them), as on the Prometheus host.
      const copy = path.join(dir, file.replace(/\W/g, '-'));
      await mkdir(copy, { recursive: true });
      let text = read(`${MONITORING}/${file}`);
      for (const scrape of config(file).scrape_configs) {
        const credentials = scrape.authorization?.credentials_file;
        if (!credentials) continue;
        const local = path.join(copy, 'segredos', path.basename(credentials));
        await mkdir(path.dirname(local), { recursive: true });
        await writeFile(local, 'token-de-teste', { mode: 0o400 });
        text = text.replaceAll(credentials, local);
      }
      await writeFile(path.join(copy, file), text);
      for (const rule of config(file).rule_files) await cp(path.join(ROOT, MONITORING, rule), path.join(copy, rule));
      const run = await runTool(promtool, ['check', 'config', file], { cwd: copy });
      expect(run.stdout + run.stderr).toMatch(/SUCCESS: \d+ rule files found/);
      expect(run.code).toBe(0);
    });

    it(`${file} scrapes /metrics of the API and the workers with METRICS_TOKEN as a bearer token, and probes /readyz`, () => {
      const jobs = new Map(config(file).scrape_configs.map((s) => [s.job_name, s]));
      expect([...jobs.keys()].sort()).toEqual(['censo-api', 'censo-readyz', 'censo-worker']);
      for (const name of ['censo-api', 'censo-worker']) {
        expect(jobs.get(name)!.metrics_path).toBe('/metrics');
        expect(jobs.get(name)!.authorization?.type).toBe('Bearer');
      }
      expect(read(`${MONITORING}/${file}`)).toMatch(/module: \[http_2xx\]/);
      expect(read(`${MONITORING}/${file}`)).toMatch(/\/readyz/);
      expect(config(file).rule_files).toEqual(['alertas.yml']);
    });
  }

  it('each SLO has a fast and a slow multi-window burn-rate alert (SRE workbook: 14.4x 1h/5m, 6x 6h/30m, 3x 1d/2h, 1x 3d/6h), each quiet in a case within the budget', () => {
    const all = rules();
    const slo = all.filter((r) => r.alert?.startsWith('CensoSLO'));
    expect(slo.map((r) => r.alert!.replace(/(Rapido|Lento)$/, '')).sort()).toEqual([
      'CensoSLOLoteErros',
      'CensoSLOLoteErros',
      'CensoSLOLoteLatencia',
      'CensoSLOLoteLatencia',
      'CensoSLOSincronaErros',
      'CensoSLOSincronaErros',
      'CensoSLOSincronaLatencia',
      'CensoSLOSincronaLatencia',
    ]);
    const windows = (expr: string) =>
      [...expr.matchAll(/censo:(\w+):razao(\w+) > \((?:([\d.]+) \* )?([\d.]+)\)/g)].map((m) => `${m[3] ?? '1'}x${m[2]}`);
    for (const rule of slo) {
      const expected = rule.alert!.endsWith('Rapido') ? ['14.4x1h', '14.4x5m', '6x6h', '6x30m'] : ['3x1d', '3x2h', '1x3d', '1x6h'];
      expect(windows(rule.expr), rule.alert).toEqual(expected);
      // Every window it reads is recorded.
      for (const [, name] of rule.expr.matchAll(/(censo:\w+:razao\w+)/g))
        expect(
          all.some((r) => r.record === name),
          name,
        ).toBe(true);
    }
    const cases = parse(read(`${MONITORING}/alertas.test.yml`)) as {
      tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    };
    const quiet = new Set(
      cases.tests
        .flatMap((t) => t.alert_rule_test ?? [])
        .filter((t) => t.exp_alerts.length === 0)
        .map((t) => t.alertname),
    );
    expect(slo.filter((r) => !quiet.has(r.alert!)).map((r) => r.alert)).toEqual([]);
  });

  it(
    'the SLO cases can fail: an objective read from the wrong routes does not pass them',
    async () => {
      const copy = path.join(dir, 'mutated-slo');
      await mkdir(copy);
      await cp(path.join(ROOT, MONITORING, 'alertas.test.yml'), path.join(copy, 'alertas.test.yml'));
      const original = await readFile(path.join(ROOT, MONITORING, 'alertas.yml'), 'utf8');
      // Every /api route instead of the synchronous ones: the failing batch route of the quiet case counts.
      await writeFile(
        path.join(copy, 'alertas.yml'),
        original.replaceAll('route=~"/api/divergencias-rf|/api/retorno-rf|/api/censo-corrigido"', 'route=~"/api/.*"'),
      );
      const run = await runTool(promtool, ['test', 'rules', 'alertas.test.yml'], { cwd: copy });
      expect(run.code).not.toBe(0);
      expect(run.stdout + run.stderr).toContain('CensoSLOSincronaErros');
    },
    PROMTOOL_CASES_MS,
  );

  it('docs/operacao.md says what to do for every alert, and for no other', () => {
    const section = read('docs/operacao.md').split('\n## Monitoramento\n')[1]!.split('\n## ')[0]!;
    const documented = [...section.matchAll(/^\| `(Censo\w+)` \|/gm)].map((m) => m[1]!);
    const alerts = rules().flatMap((r) => (r.alert ? [r.alert] : []));
    expect(documented.sort()).toEqual(alerts.sort());
  });

  it('the alerts name only jobs that the scrape configurations define', () => {
    const jobs = new Set(config('prometheus.yml').scrape_configs.map((s) => s.job_name));
    const named = rules().flatMap((r) => [...r.expr.matchAll(/job=~?"([^"]+)"/g)].flatMap((m) => m[1]!.split('|')));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((job) => !jobs.has(job))).toEqual([]);
  });
});
