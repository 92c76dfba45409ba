// Section 3b: an S3 bucket against the shared folder (bench/storage.mjs).
import { fmt, table } from '../lib.mjs';
import { runStorage } from '../storage.mjs';
import { MiB } from './report.mjs';

export async function storageSection({ log, section, measure, data, quick, redisUrl, redisVersion }) {
  log('\nStorage: S3 bucket vs shared folder...');
  const storage = await measure(redisVersion, 'storage', () => runStorage(data, { quick, redisUrl, log }));
  if (storage) {
    const overhead = storage.s3Ms - storage.folderMs;
    section(
      '3b. Storage: an S3 bucket against the shared folder',
      [
        `The large retorno-rf (p100k xlsx + txt, ${(storage.bodyBytes / MiB).toFixed(1)} MiB body; ${(storage.resultBytes / MiB).toFixed(1)} MiB answer) over HTTP, one request at a time, ${storage.runs} alternating pairs after a warm-up. Both deployments are queue mode with one API and one worker process; the S3 one has \`S3_BUCKET\` set and no shared folder, against s3rver ${storage.s3rver} on loopback, which runs in the bench process (its CPU time counts). "Transfers alone" is the SDK moving the same bytes in the service's order (2 inputs up, down, the result up, down) with nothing else: the storage's own cost.`,
        '',
        table(
          ['storage', 'median ms', 'vs folder', 'API peak RSS MiB'],
          [
            ['folder (`UPLOAD_DIR`)', fmt(storage.folderMs), '1.00×', fmt(storage.apiPeakRssMB.folder)],
            ['S3 bucket', fmt(storage.s3Ms), `${(storage.s3Ms / storage.folderMs).toFixed(2)}×`, fmt(storage.apiPeakRssMB.s3)],
            ['transfers alone (SDK ↔ s3rver)', fmt(storage.transfersMs), '', ''],
          ],
        ),
        '',
        `Overhead of the bucket: ${fmt(overhead)} ms per request, against ${fmt(storage.transfersMs)} ms for the transfers alone.`,
      ].join('\n'),
    );
  } else {
    section(
      '3b. Storage: an S3 bucket against the shared folder',
      redisVersion ? '_Failed, see the console output._' : '_Redis not reachable: skipped._',
    );
  }
}
