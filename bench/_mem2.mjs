import { runJob } from '@censo/shared';
import { readFileSync } from 'node:fs';
const t0 = Date.now(); const samples = [];
const timer = setInterval(() => { const m = process.memoryUsage(); samples.push([Date.now() - t0, (m.rss / 1048576) | 0, (m.heapUsed / 1048576) | 0, (m.heapTotal / 1048576) | 0, (m.external/1048576)|0]); }, 100);
const r = await runJob({ kind: 'retorno-rf', retorno: { path: '.bench/t25/retorno.xlsx', format: 'xlsx' }, txt: { path: '.bench/t25/censo.txt' }, format: 'json', resultPath: '/tmp/r.json' });
clearInterval(timer);
console.log(r.count, Date.now() - t0);
for (const s of samples.filter((_, i) => i % 3 === 0)) console.log(s.join('\t'));
console.log(readFileSync('/proc/self/status', 'utf8').match(/VmHWM.*/)[0]);
