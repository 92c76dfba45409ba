// cluster/autoscale.mjs (KEDA's rule for the workers, replayed) with the types the tests need: a
// plain ES module has no declarations, so it is loaded by URL and given them here.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface ScalingPolicy {
  readonly type: 'Pods' | 'Percent';
  readonly value: number;
  readonly periodMs: number;
}

export interface ScalingRules {
  readonly windowMs: number;
  readonly selectPolicy: 'Max' | 'Min' | 'Disabled';
  readonly policies: readonly ScalingPolicy[];
}

export interface Trigger {
  readonly name: string;
  readonly type: string;
  readonly target: number;
  readonly activation: number;
  readonly listName?: string;
  readonly query?: string;
}

export interface Recipe {
  readonly file: string | null;
  readonly name: string | null;
  readonly timeScale: number;
  readonly minReplicaCount: number;
  readonly maxReplicaCount: number;
  readonly pollingMs: number;
  readonly cooldownMs: number;
  readonly tolerance: number;
  readonly scaleUp: ScalingRules;
  readonly scaleDown: ScalingRules;
  readonly triggers: readonly Trigger[];
}

export interface RecipeOptions {
  readonly timeScale?: number;
  readonly minReplicaCount?: number;
  readonly maxReplicaCount?: number;
}

export type Metrics = Record<string, number | null>;

export interface Decision {
  readonly desired: number;
  readonly proposal: number | null;
  readonly perTrigger: Record<string, number>;
  readonly active: boolean;
  readonly reason: string;
}

export interface HistoryEntry {
  readonly at: number;
  readonly elapsedMs: number;
  readonly metrics: Metrics;
  readonly proposal: number | null;
  readonly desired: number;
  readonly actual: number;
  readonly reason: string;
}

export interface Autoscaler {
  readonly recipe: Recipe;
  readonly history: readonly HistoryEntry[];
  readonly errors: ReadonlyArray<{ at: number; what: string; error: string }>;
  readonly replicas: number;
  tick(): Promise<HistoryEntry>;
  stop(): Promise<void>;
}

export interface AutoscaleModule {
  readonly SCALED_OBJECT: string;
  readonly HPA_TOLERANCE: number;
  loadRecipe(options?: RecipeOptions & { file?: string }): Promise<Recipe>;
  recipeFromScaledObject(doc: unknown, options?: RecipeOptions & { file?: string | null }): Recipe;
  replicasForMetric(value: number, target: number, current: number, tolerance?: number): number;
  createReplicaCalculator(
    recipe: Recipe,
    options?: { start?: number },
  ): { next(input: { now: number; metrics?: Metrics; current: number }): Decision };
  listKey(listName: string, queuePrefix?: string): string;
  parseQuery(query: string): { aggregate: 'max' | 'min' | 'sum'; name: string; labels: Record<string, string> };
  samplesOf(exposition: string, selector: { name: string; labels: Record<string, string> }): number[];
  metricsFrom(options: {
    redis?: { llen(key: string): Promise<number> };
    queuePrefix?: string;
    apiUrls?: string | readonly string[];
    apiKey?: string;
    timeoutMs?: number;
  }): (triggers: readonly Trigger[]) => Promise<Metrics>;
  startAutoscaler(options: {
    recipe: Recipe;
    readMetrics: (triggers: readonly Trigger[]) => Promise<Metrics>;
    addWorker: () => unknown;
    removeWorker: () => unknown;
    replicas?: number;
    poll?: boolean;
    maxTicks?: number;
    metricsTimeoutMs?: number;
    now?: () => number;
    onDecision?: (entry: HistoryEntry) => void;
  }): Autoscaler;
  scalingEvents(history: readonly HistoryEntry[]): Array<{ at: number; elapsedMs: number; from: number; to: number }>;
}

const MODULE = path.join(fileURLToPath(new URL('../../', import.meta.url)), 'cluster', 'autoscale.mjs');

export const autoscale = (await import(pathToFileURL(MODULE).href)) as AutoscaleModule;
