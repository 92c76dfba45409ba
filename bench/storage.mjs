// Storage: the large retorno-rf through an S3 bucket against the same through the shared folder,
// same run, one request at a time, alternating. Both are queue-mode deployments (one API process,
// one worker process); the S3 server is s3rver (the tests' server) in this bench process, on
// loopback, so its own CPU time is part of the S3 figure, as a storage host's network and disk
// would be in a real deployment.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { API_KEY, MULTIPART_TYPE, deploy, multipartBody } from './http.mjs';
import { median, memoryOf, versionOf } from './lib.mjs';

export async function runStorage(data, { quick, redisUrl, log = console.log }) {
  const { default: S3rver } = await import('s3rver');
  const directory = mkdtempSync(path.join(os.tmpdir(), 'censo-bench-s3-'));
  const bucket = 'censo-bench';
  const s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
  const { port } = await s3.run();
  const body = multipartBody([
    { field: 'retorno', filename: 'retorno.xlsx', content: readFileSync(data.p100k.files.xlsx) },
    { field: 'txt', filename: 'censo.txt', content: readFileSync(data.p100k.files.txt) },
  ]);
  const s3Env = {
    S3_BUCKET: bucket,
    S3_ENDPOINT: `http://127.0.0.1:${port}`,
    S3_PREFIX: 'bench/',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  const folder = await deploy('storage-folder', 1, redisUrl);
  const bucketed = await deploy('storage-s3', 1, redisUrl, s3Env);
  const runs = quick ? 3 : 7;
  const times = { folder: [], s3: [], transfers: [] };
  const transfers = await transferFloor(port, bucket, data);
  try {
    const once = async (d) => {
      const t0 = performance.now();
      const res = await fetch(`${d.url}/api/retorno-rf`, {
        method: 'POST',
        body,
        headers: { 'x-api-key': API_KEY, 'content-type': MULTIPART_TYPE },
      });
      const bytes = (await res.arrayBuffer()).byteLength;
      if (res.status !== 200) throw new Error(`retorno-rf answered ${res.status}`);
      return { ms: performance.now() - t0, bytes };
    };
    // Warm-up (not recorded), then alternate so that drift in the machine hits both alike.
    await once(folder);
    await once(bucketed);
    let bytes = 0;
    for (let i = 0; i < runs; i++) {
      times.folder.push((await once(folder)).ms);
      const r = await once(bucketed);
      times.s3.push(r.ms);
      bytes = r.bytes;
      times.transfers.push(await transfers(bytes));
      log(
        `  storage run ${i + 1}: folder ${times.folder.at(-1).toFixed(0)} ms, s3 ${r.ms.toFixed(0)} ms, transfers alone ${times.transfers.at(-1).toFixed(0)} ms`,
      );
    }
    const apiPeak = { folder: memoryOf(folder.api.pid).hwm, s3: memoryOf(bucketed.api.pid).hwm };
    return {
      runs,
      bodyBytes: body.length,
      resultBytes: bytes,
      folderMs: median(times.folder),
      s3Ms: median(times.s3),
      transfersMs: median(times.transfers),
      apiPeakRssMB: apiPeak,
      s3rver: versionOf('s3rver'),
    };
  } finally {
    await Promise.all([folder.stop(), bucketed.stop()]);
    await s3.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * The storage's own share: the SDK alone moving what one S3 request moves, in the service's order
 * (both inputs up, both down to the worker, the result up, and down to the API), same server.
 */
async function transferFloor(port, bucket, data) {
  // The bench runs on Node 20 on purpose (the project's engine); the SDK's notice about 2027 is known.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const { S3Client, GetObjectCommand, DeleteObjectsCommand } = await import('@aws-sdk/client-s3');
  const { Upload } = await import('@aws-sdk/lib-storage');
  const client = new S3Client({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const inputs = [readFileSync(data.p100k.files.xlsx), readFileSync(data.p100k.files.txt)];
  const put = (Key, Body) => new Upload({ client, params: { Bucket: bucket, Key, Body }, queueSize: 1, partSize: 5 * 1024 * 1024 }).done();
  const get = async (Key) => {
    const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key }));
    for await (const _chunk of out.Body) {
      // drained
    }
  };
  return async (resultBytes) => {
    const t0 = performance.now();
    await put('floor/retorno.xlsx', inputs[0]);
    await put('floor/censo.txt', inputs[1]);
    await Promise.all([get('floor/retorno.xlsx'), get('floor/censo.txt')]);
    await put('floor/resultado', Buffer.alloc(resultBytes, 0x61));
    await get('floor/resultado');
    const ms = performance.now() - t0;
    const Objects = ['retorno.xlsx', 'censo.txt', 'resultado'].map((name) => ({ Key: `floor/${name}` }));
    await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects } }));
    return ms;
  };
}
