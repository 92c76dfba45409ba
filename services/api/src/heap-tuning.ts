// Garbage-collector settings for the process that receives uploads and streams answers, applied
// on import, so `main.ts` imports this module before anything else.
//
// V8 13.6 (Node 24) reclaims the short-lived Buffers of a 25 MB upload, and of the answer streamed
// back, with full mark-compacts instead of young-generation collections: its new space grew to a
// size where the young trigger for ArrayBuffer memory lies above the external-memory limit that
// starts a full marking. Measured on the embedded API driven with j25 (BENCHMARKS.md, "Node 24's
// collector and upload buffers"): about 2.5 full collections a request on the main thread, the
// upload and the download each slower than on Node 20. Counting external memory in the global
// limit takes the full collections out; a 16 MB young-generation cap keeps the resident set where
// it was (counting alone raised it by a quarter with six uploads in flight). Node 20's V8 has
// neither flag nor the problem.
import v8 from 'node:v8';

export const HEAP_FLAGS: readonly string[] = ['--external-memory-accounted-in-global-limit', '--scavenger-max-new-space-capacity-mb=16'];

/** The flags this V8 (`process.versions.v8`) needs: from 13.6, where the young trigger moved. */
export function heapFlagsFor(v8Version: string): readonly string[] {
  const [major = 0, minor = 0] = v8Version.split('.').map(Number);
  return major > 13 || (major === 13 && minor >= 6) ? HEAP_FLAGS : [];
}

for (const flag of heapFlagsFor(process.versions.v8)) v8.setFlagsFromString(flag);
