// The Kubernetes recipe (deploy/kubernetes, SPEC §9): every manifest is a valid object of its
// kind (the Kubernetes and KEDA schemas of kubernetes-models), `kubectl kustomize` builds the
// production overlay, and the built objects say what docs/operacao.md promises: probes on the
// service's own routes, non-root read-only containers, selectors that match the pods, only the
// settings the service reads, pinned images, secrets from files the operator makes.
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_QUEUE, loadConfig } from '@censo/shared';
import { ROOT, VERSION, isKnownVariable, requireTool, runTool, yamlDocuments } from './recipes.js';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
  envFrom?: Array<{ configMapRef?: { name: string } }>;
  ports?: Array<{ name: string; containerPort: number }>;
  livenessProbe?: { httpGet?: { path: string; port: string } };
  readinessProbe?: { httpGet?: { path: string; port: string } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    runAsNonRoot?: boolean;
    runAsUser?: number;
    capabilities?: { drop?: string[] };
    seccompProfile?: { type: string };
  };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
interface PodSpec {
  containers: Container[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  volumes?: Array<{ name: string; emptyDir?: Record<string, unknown>; configMap?: { name: string } }>;
}
interface Workload extends K8sObject {
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}

const KUBE = 'deploy/kubernetes';
const OVERLAY = `${KUBE}/overlays/producao`;

interface Kustomization {
  resources?: string[];
  patchesStrategicMerge?: string[];
  secretGenerator?: Array<{ files: string[] }>;
  configMapGenerator?: Array<{ files?: string[] }>;
}
const kustomization = (dir: string) => yamlDocuments(`${dir}/kustomization.yaml`)[0] as Kustomization;

/** The whole objects a kustomization lists (patches are checked once applied, in the build). */
const manifestFiles = (dir: string): string[] => (kustomization(dir).resources ?? []).map((file) => `${dir}/${file}`);

/** The kubernetes-models class of an object's apiVersion and kind; the KEDA ones from @kubernetes-models/keda. */
async function validateObject(object: K8sObject): Promise<void> {
  const module = object.apiVersion.startsWith('keda.sh/')
    ? `@kubernetes-models/keda/${object.apiVersion}/${object.kind}`
    : `kubernetes-models/${object.apiVersion}/${object.kind}`;
  const exports = (await import(module)) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = exports[object.kind];
  if (!Model) throw new Error(`no model for ${object.apiVersion} ${object.kind}`);
  new Model(object).validate();
}

/** The files the operator creates before `kubectl apply -k` (segredos/ and the internal CA). */
function operatorFiles(): string[] {
  const overlay = kustomization(OVERLAY);
  return [...(overlay.secretGenerator ?? []).flatMap((g) => g.files), ...(overlay.configMapGenerator ?? []).flatMap((g) => g.files ?? [])];
}

/** What an operator would put in each file, as segredos/README.md shows. */
function placeholder(file: string): string {
  const name = path.basename(file);
  if (name === 'DATABASE_URL') return 'postgres://censo_query:senha@pg.censo.interno:5432/censo?sslmode=verify-full';
  if (name === 'SESSION_SECRET') return randomBytes(48).toString('base64');
  if (name.endsWith('.crt')) return '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  return randomBytes(32).toString('hex');
}

let built: K8sObject[] = [];

const ofKind = (kind: string) => built.filter((o) => o.kind === kind);
const named = <T extends K8sObject>(kind: string, name: string) => {
  const found = built.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the built overlay`);
  return found as T;
};
const api = () => named<Workload>('Deployment', 'censo-api');
const worker = () => named<Workload>('Deployment', 'censo-worker');
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);

describe('the manifests', () => {
  it('each file parses and each object is valid for its kind (Kubernetes and KEDA schemas)', async () => {
    const files = [...manifestFiles(`${KUBE}/base`), ...manifestFiles(OVERLAY)];
    expect(files.length).toBeGreaterThanOrEqual(9);
    for (const file of files) {
      for (const object of yamlDocuments(file) as K8sObject[]) {
        await expect(validateObject(object), `${file}: ${object.kind} ${object.metadata.name}`).resolves.toBeUndefined();
      }
    }
  });

  it('the models refuse a wrong object, so the check above can fail', async () => {
    const deployment = yamlDocuments(`${KUBE}/base/api-deployment.yaml`)[0] as Workload;
    const broken = structuredClone(deployment);
    (broken.spec as Record<string, unknown>).replicas = 'two';
    await expect(validateObject(broken)).rejects.toThrow();
    const scaled = yamlDocuments(`${KUBE}/base/worker-scaledobject.yaml`)[0] as K8sObject;
    const noTarget = structuredClone(scaled);
    delete noTarget.spec!.scaleTargetRef;
    await expect(validateObject(noTarget)).rejects.toThrow();
  });

  it('needs secret files the operator makes, and git ignores every one of them', async () => {
    const git = requireTool('git');
    const secretFiles = operatorFiles().filter((f) => f.startsWith('segredos/'));
    expect(secretFiles.length).toBeGreaterThanOrEqual(10);
    for (const file of secretFiles) {
      const check = await runTool(git, ['check-ignore', '--no-index', '-v', `${OVERLAY}/${file}`]);
      expect(check.stdout, file).toContain('segredos/.gitignore');
    }
    // Exit 1: not ignored. The instructions stay in the repository.
    expect((await runTool(git, ['check-ignore', '--no-index', '-q', `${OVERLAY}/segredos/README.md`])).code).toBe(1);
  });

  it('commit no Secret: the only one is generated from files the operator makes', async () => {
    const files = [...manifestFiles(`${KUBE}/base`), ...manifestFiles(OVERLAY)];
    const secrets = files.flatMap((file) => (yamlDocuments(file) as K8sObject[]).filter((o) => o.kind === 'Secret').map(() => file));
    expect(secrets).toEqual([]);
  });
});

describe('kubectl kustomize deploy/kubernetes/overlays/producao', () => {
  let workdir = '';

  beforeAll(async () => {
    const kubectl = requireTool('kubectl');
    // A copy of the recipe, with placeholder files where the operator puts the real ones.
    workdir = await mkdtemp(path.join(os.tmpdir(), 'censo-kustomize-'));
    await cp(path.join(ROOT, KUBE), workdir, { recursive: true });
    for (const file of operatorFiles()) await writeFile(path.join(workdir, 'overlays/producao', file), placeholder(file));
    const run = await runTool(kubectl, ['kustomize', path.join(workdir, 'overlays/producao')]);
    if (run.code !== 0) throw new Error(`kubectl kustomize ${OVERLAY} failed: ${run.stderr}`);
    built = parseAllDocuments(run.stdout).map((doc) => doc.toJS() as K8sObject);
    // kustomize wraps long base64 values at 76 characters, as `base64` does; the API server's
    // decoder skips the newlines, the schema's "byte" pattern does not.
    for (const object of built) {
      if (object.kind !== 'Secret') continue;
      for (const key of Object.keys(object.data ?? {})) object.data![key] = object.data![key]!.replace(/\s+/g, '');
    }
  });
  afterAll(async () => {
    if (workdir) await rm(workdir, { recursive: true, force: true });
  });

  it('builds every object of the recipe, all valid', async () => {
    const kinds = built.map((o) => o.kind).sort();
    expect(kinds).toEqual(
      [
        'ConfigMap',
        'ConfigMap',
        'ConfigMap',
        'Deployment',
        'Deployment',
        'HorizontalPodAutoscaler',
        'Ingress',
        'Ingress',
        'Namespace',
        'NetworkPolicy',
        'NetworkPolicy',
        'NetworkPolicy',
        'NetworkPolicy',
        'NetworkPolicy',
        'PodDisruptionBudget',
        'PodDisruptionBudget',
        'ScaledObject',
        'Secret',
        'Service',
        'Service',
        'Service',
      ].sort(),
    );
    for (const object of built) await validateObject(object);
    for (const object of built.filter((o) => o.kind !== 'Namespace')) expect(object.metadata.namespace, object.kind).toBe('censo');
  });

  it('runs the API with --role=api, at least two replicas, probes on /healthz and /readyz', () => {
    const deployment = api();
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    const [container] = deployment.spec.template.spec.containers;
    expect(container!.command).toEqual(['node', 'services/api/dist/main.js', '--role=api']);
    expect(container!.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(container!.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(container!.ports).toEqual([{ name: 'http', containerPort: 3000 }]);
  });

  it('runs the worker with PORT set, so it serves /healthz, /readyz and /metrics where the probes look', () => {
    const [container] = worker().spec.template.spec.containers;
    expect(container!.command).toEqual(['node', 'services/worker/dist/main.js']);
    const env = Object.fromEntries((container!.env ?? []).map((e) => [e.name, e.value]));
    const port = container!.ports!.find((p) => p.name === container!.livenessProbe?.httpGet?.port)?.containerPort;
    expect(String(port)).toBe(env.PORT);
    expect(container!.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(container!.readinessProbe?.httpGet?.path).toBe('/readyz');
    // The default is the node's CPU count, not the container's limit.
    expect(Number(env.WORKER_CONCURRENCY)).toBeGreaterThan(0);
  });

  it('runs no container as root, read-only, without privilege escalation or capabilities, under RuntimeDefault seccomp', () => {
    for (const deployment of [api(), worker()]) {
      const pod = deployment.spec.template.spec;
      for (const container of pod.containers) {
        const context = container.securityContext!;
        const what = `${deployment.metadata.name}/${container.name}`;
        expect(context.runAsNonRoot ?? pod.securityContext?.runAsNonRoot, what).toBe(true);
        expect(context.runAsUser ?? pod.securityContext?.runAsUser, what).toBeGreaterThan(0);
        expect(context.readOnlyRootFilesystem, what).toBe(true);
        expect(context.allowPrivilegeEscalation, what).toBe(false);
        expect(context.capabilities?.drop, what).toEqual(['ALL']);
        expect(context.seccompProfile?.type ?? pod.securityContext?.seccompProfile?.type, what).toBe('RuntimeDefault');
        expect(context).not.toHaveProperty('privileged', true);
      }
    }
  });

  it('gives UPLOAD_DIR and /tmp an emptyDir (the root filesystem is read-only), and requests and limits every container', () => {
    const config = named('ConfigMap', built.find((o) => o.kind === 'ConfigMap' && o.data?.UPLOAD_DIR)!.metadata.name);
    for (const deployment of [api(), worker()]) {
      const pod = deployment.spec.template.spec;
      const emptyDirs = new Set((pod.volumes ?? []).filter((v) => v.emptyDir).map((v) => v.name));
      for (const container of pod.containers) {
        const mounted = (container.volumeMounts ?? []).filter((m) => emptyDirs.has(m.name)).map((m) => m.mountPath);
        expect(mounted).toEqual(expect.arrayContaining([config.data!.UPLOAD_DIR, '/tmp']));
        for (const resource of ['cpu', 'memory']) {
          expect(container.resources?.requests?.[resource], `${container.name} requests ${resource}`).toBeTruthy();
          expect(container.resources?.limits?.[resource], `${container.name} limits ${resource}`).toBeTruthy();
        }
      }
    }
  });

  it('sets only variables the service (or Node and the AWS SDK) reads, and every secret from the generated Secret', () => {
    const configMaps = new Map(ofKind('ConfigMap').map((o) => [o.metadata.name, o]));
    const secret = ofKind('Secret')[0]!;
    for (const deployment of [api(), worker()]) {
      for (const container of deployment.spec.template.spec.containers) {
        const names = (container.env ?? []).map((e) => e.name);
        for (const ref of container.envFrom ?? []) {
          const configMap = configMaps.get(ref.configMapRef!.name);
          expect(configMap, `${ref.configMapRef!.name} is built`).toBeDefined();
          names.push(...Object.keys(configMap!.data ?? {}));
        }
        expect(names.filter((name) => !isKnownVariable(name))).toEqual([]);
        for (const { valueFrom } of container.env ?? []) {
          if (!valueFrom?.secretKeyRef) continue;
          expect(valueFrom.secretKeyRef.name).toBe(secret.metadata.name);
          expect(Object.keys(secret.data ?? {})).toContain(valueFrom.secretKeyRef.key);
        }
      }
    }
  });

  it('gives each container an environment the service starts with (loadConfig accepts it)', () => {
    const configMaps = new Map(ofKind('ConfigMap').map((o) => [o.metadata.name, o.data ?? {}]));
    const secret = ofKind('Secret')[0]!;
    const secretValue = (key: string) => Buffer.from(secret.data![key]!, 'base64').toString('utf8');
    const environment = (container: Container) =>
      ({
        ...Object.assign({}, ...(container.envFrom ?? []).map((ref) => configMaps.get(ref.configMapRef!.name))),
        ...Object.fromEntries(
          (container.env ?? []).map((e) => [e.name, e.valueFrom?.secretKeyRef ? secretValue(e.valueFrom.secretKeyRef.key) : e.value]),
        ),
      }) as Record<string, string>;
    const apiConfig = loadConfig(environment(api().spec.template.spec.containers[0]!));
    expect(apiConfig.redis).toMatchObject({ kind: 'sentinel', name: 'censo' });
    expect(apiConfig.redis).toHaveProperty('password');
    expect(apiConfig.storage.kind).toBe('s3');
    expect(apiConfig.signIn?.publicUrl).toMatch(/^https:\/\//);
    // The ingress controller's addresses, never `true` (every hop trusted: Prometheus, which
    // reaches port 3000 too, could forge X-Forwarded-For in the access log).
    expect(Array.isArray(apiConfig.trustProxy)).toBe(true);
    // TLS to Redis and its Sentinels, with the internal CA the overlay mounts.
    expect(apiConfig.redis).toMatchObject({ kind: 'sentinel', tls: true });
    for (const deployment of [api(), worker()]) {
      const [container] = deployment.spec.template.spec.containers;
      const ca = (container!.env ?? []).find((e) => e.name === 'NODE_EXTRA_CA_CERTS')?.value;
      const mount = (container!.volumeMounts ?? []).find((m) => ca?.startsWith(`${m.mountPath}/`));
      expect(mount, `${deployment.metadata.name}: NODE_EXTRA_CA_CERTS inside a mounted volume`).toBeDefined();
      const volume = deployment.spec.template.spec.volumes?.find((v) => v.name === mount!.name);
      const caMap = named('ConfigMap', volume!.configMap!.name);
      expect(Object.keys(caMap.data ?? {})).toContain(path.basename(ca!));
    }
    const workerConfig = loadConfig(environment(worker().spec.template.spec.containers[0]!));
    expect(workerConfig.portFromEnv).toBe(true);
    expect(workerConfig.queuePrefix).toBe(apiConfig.queuePrefix);
    expect(workerConfig.storage).toEqual(apiConfig.storage);
  });

  it('pins every image to a version (the package version for the service), never latest', () => {
    const images = [api(), worker()].flatMap((d) => d.spec.template.spec.containers.map((c) => c.image));
    for (const image of images) {
      expect(image).toMatch(/(:[\w][\w.-]*|@sha256:[0-9a-f]{64})$/);
      expect(image).not.toMatch(/:latest$/);
      expect(image.endsWith(`/censo-api:${VERSION}`) || /@sha256:[0-9a-f]{64}$/.test(image)).toBe(true);
    }
  });

  it('selects the pods it means: Services, PodDisruptionBudgets, NetworkPolicies and the HPA', () => {
    const pods = [api(), worker()].map((d) => ({ name: d.metadata.name, labels: d.spec.template.metadata.labels }));
    const selected = (selector: Record<string, string>) => pods.filter((p) => matches(selector, p.labels)).map((p) => p.name);
    const service = (name: string) => named<K8sObject & { spec: { selector: Record<string, string> } }>('Service', name).spec.selector;
    expect(selected(service('censo-api'))).toEqual(['censo-api']);
    expect(selected(service('censo-api-pods'))).toEqual(['censo-api']);
    expect(selected(service('censo-worker'))).toEqual(['censo-worker']);
    for (const budget of ofKind('PodDisruptionBudget') as Array<
      K8sObject & { spec: { selector: { matchLabels: Record<string, string> } } }
    >) {
      expect(selected(budget.spec.selector.matchLabels)).toEqual([budget.metadata.name]);
    }
    expect(
      named<K8sObject & { spec: { minAvailable: number } }>('PodDisruptionBudget', 'censo-api').spec.minAvailable,
    ).toBeGreaterThanOrEqual(1);
    const hpa = named<
      K8sObject & { spec: { scaleTargetRef: { name: string }; minReplicas: number; metrics: Array<{ resource: { name: string } }> } }
    >('HorizontalPodAutoscaler', 'censo-api');
    expect(hpa.spec.scaleTargetRef.name).toBe('censo-api');
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.spec.metrics.map((m) => m.resource.name)).toEqual(['cpu']);
  });

  it('denies by default, lets requests in only from the ingress controller, and lets out only what the service uses', () => {
    type Rule = { from?: Array<Record<string, { matchLabels: Record<string, string> }>>; to?: unknown[]; ports?: Array<{ port: number }> };
    type Policy = K8sObject & {
      spec: { podSelector: { matchLabels?: Record<string, string> }; policyTypes: string[]; ingress?: Rule[]; egress?: Rule[] };
    };
    const policies = ofKind('NetworkPolicy') as Policy[];
    const denyAll = policies.filter((p) => Object.keys(p.spec.podSelector).length === 0 && !p.spec.ingress && !p.spec.egress);
    expect(denyAll.map((p) => p.spec.policyTypes.sort())).toEqual([['Egress', 'Ingress']]);

    const forPod = (deployment: Workload, direction: 'ingress' | 'egress') =>
      policies
        .filter(
          (p) =>
            Object.keys(p.spec.podSelector).length > 0 &&
            matches(p.spec.podSelector.matchLabels ?? {}, deployment.spec.template.metadata.labels),
        )
        .flatMap((p) => p.spec[direction] ?? []);
    const namespaces = (rules: Rule[]) =>
      rules.flatMap((r) => r.from ?? []).map((peer) => peer.namespaceSelector?.matchLabels['kubernetes.io/metadata.name']);
    expect(namespaces(forPod(api(), 'ingress')).sort()).toEqual(['ingress-nginx', 'monitoring']);
    expect(namespaces(forPod(worker(), 'ingress'))).toEqual(['monitoring']);
    // Prometheus's pods of the monitoring namespace, on the API's port only (L4: no path).
    const monitoringPeers = [...forPod(api(), 'ingress'), ...forPod(worker(), 'ingress')].filter((r) =>
      namespaces([r]).includes('monitoring'),
    );
    for (const rule of monitoringPeers) {
      expect((rule.ports ?? []).map((p) => p.port)).toEqual([3000]);
      const monitoring = (rule.from ?? []).filter((peer) => namespaces([{ from: [peer] }]).includes('monitoring'));
      for (const peer of monitoring) expect(peer.podSelector?.matchLabels, 'a pod selector').toBeDefined();
    }
    const ports = (rules: Rule[]) => new Set(rules.flatMap((r) => r.ports ?? []).map((p) => p.port));
    // DNS, Redis, Sentinel, S3 for both; PostgreSQL and https (OIDC, webhooks) for the API only.
    expect([...ports(forPod(api(), 'egress'))].sort((a, b) => a - b)).toEqual([53, 443, 5432, 6379, 9000, 26379]);
    expect([...ports(forPod(worker(), 'egress'))].sort((a, b) => a - b)).toEqual([53, 443, 6379, 9000, 26379]);
  });

  it('narrows egress to single hosts in the overlay, and keeps private and cluster ranges out of the API’s internet rule', () => {
    type Block = { ipBlock?: { cidr: string; except?: string[] } };
    type Policy = K8sObject & { spec: { egress?: Array<{ to?: Block[]; ports?: Array<{ port: number }> }> } };
    const rules = (ofKind('NetworkPolicy') as Policy[]).flatMap((p) =>
      (p.spec.egress ?? []).map((rule) => ({ policy: p.metadata.name, rule })),
    );
    const blocks = rules.flatMap(({ policy, rule }) =>
      (rule.to ?? []).flatMap((peer) => (peer.ipBlock ? [{ policy, ...peer.ipBlock }] : [])),
    );
    const internet = blocks.filter((b) => b.cidr === '0.0.0.0/0');
    expect(internet.map((b) => b.policy)).toEqual(['censo-api-saida']);
    for (const range of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10']) {
      expect(internet[0]!.except, range).toContain(range);
    }
    // Every other block is one host (the base's 10.0.0.0/8 placeholders replaced by the overlay).
    const wide = blocks.filter((b) => b.cidr !== '0.0.0.0/0' && !b.cidr.endsWith('/32'));
    expect(wide).toEqual([]);
  });

  it('keeps /metrics and /admin/queues off the public entrance: the ingress refuses them to every address', () => {
    type Path = { path: string; pathType: string };
    type Ingress = K8sObject & { spec: { rules: Array<{ host: string; http: { paths: Path[] } }> } };
    const ingresses = ofKind('Ingress') as Ingress[];
    /** The Ingress whose path ingress-nginx picks for a request path: the longest matching Prefix. */
    const routeOf = (requestPath: string) => {
      const candidates = ingresses.flatMap((ingress) =>
        ingress.spec.rules.flatMap((rule) =>
          rule.http.paths
            .filter((p) => p.pathType === 'Prefix' && (p.path === '/' || requestPath === p.path || requestPath.startsWith(`${p.path}/`)))
            .map((p) => ({ ingress, length: p.path.length })),
        ),
      );
      return candidates.sort((a, b) => b.length - a.length)[0]?.ingress;
    };
    const refusesAll = (ingress: Ingress | undefined) =>
      (ingress?.metadata.annotations?.['nginx.ingress.kubernetes.io/denylist-source-range'] ?? '').split(',').includes('0.0.0.0/0');
    for (const blocked of ['/metrics', '/metrics/', '/admin/queues', '/admin/queues/api/queues']) {
      expect(refusesAll(routeOf(blocked)), blocked).toBe(true);
    }
    for (const open of ['/', '/api/retorno', '/auth/login', '/healthz']) expect(refusesAll(routeOf(open)), open).toBe(false);
    // The same host on both, so ingress-nginx merges them into one server.
    expect(new Set(ingresses.flatMap((i) => i.spec.rules.map((r) => r.host))).size).toBe(1);
  });

  it('scales workers with KEDA on the real name of the queue’s wait list, from settings the worker container has', () => {
    type Trigger = { type: string; metadata: Record<string, string> };
    const scaled = named<K8sObject & { spec: { scaleTargetRef: { name: string }; minReplicaCount: number; triggers: Trigger[] } }>(
      'ScaledObject',
      'censo-worker',
    );
    expect(scaled.spec.scaleTargetRef.name).toBe('censo-worker');
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(2);
    const redis = scaled.spec.triggers.find((t) => t.type === 'redis-sentinel')!;
    const config = ofKind('ConfigMap').find((o) => o.data?.QUEUE_PREFIX)!;
    // BullMQ's keys are `<prefix>:<queue>:<list>` (test/deploy/queue-metrics.test.ts finds the job there).
    expect(redis.metadata.listName).toBe(`${config.data!.QUEUE_PREFIX}:${JOB_QUEUE}:wait`);
    const [container] = worker().spec.template.spec.containers;
    const available = new Set([...(container!.env ?? []).map((e) => e.name), ...Object.keys(config.data!)]);
    const fromEnv = Object.entries(redis.metadata).filter(([key]) => key.endsWith('FromEnv'));
    // KEDA takes host:port entries: REDIS_SENTINELS without rediss://, over TLS.
    expect(redis.metadata.addresses).toBe(config.data!.REDIS_SENTINELS!.replace(/rediss:\/\//g, ''));
    expect(redis.metadata.enableTLS).toBe('true');
    expect(fromEnv.map(([key]) => key).sort()).toEqual(['passwordFromEnv', 'sentinelMasterFromEnv', 'sentinelPasswordFromEnv']);
    for (const [, variable] of fromEnv) expect(available, variable).toContain(variable);
    expect(scaled.spec.triggers.find((t) => t.type === 'prometheus')?.metadata.query).toContain('priority="assincrona"');
  });

  it('puts TLS on the Ingress, with limits above the service’s own so its 408 and 413 reach the client', () => {
    type Ingress = K8sObject & { spec: { tls: Array<{ hosts: string[]; secretName: string }>; rules: Array<{ host: string }> } };
    const ingress = named<Ingress>('Ingress', 'censo-api');
    expect(ingress.spec.tls[0]!.hosts).toEqual(ingress.spec.rules.map((r) => r.host));
    const annotations = ingress.metadata.annotations!;
    const defaults = loadConfig({});
    expect(Number.parseInt(annotations['nginx.ingress.kubernetes.io/proxy-body-size']!, 10)).toBeGreaterThan(4 * 25);
    expect(annotations['nginx.ingress.kubernetes.io/proxy-request-buffering']).toBe('off');
    const readS = Number(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout']);
    expect(readS).toBeGreaterThan((defaults.uploadTimeoutMs + defaults.jobTimeoutMs) / 1000);
  });
});
