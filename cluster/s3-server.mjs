// The bucket host: s3rver (a real S3 protocol implementation, the test suite's S3 server) on
// this namespace's address. Usage: node cluster/s3-server.mjs <address> <port> <folder> <bucket>
import S3rver from 's3rver';

const [address, port, directory, bucket] = process.argv.slice(2);
const server = new S3rver({ address, port: Number(port), directory, silent: true, configureBuckets: [{ name: bucket, configs: [] }] });
const { port: listening } = await server.run();
console.log(JSON.stringify({ msg: 's3 listening', address, port: listening, bucket }));
for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => void server.close().then(() => process.exit(0)));
