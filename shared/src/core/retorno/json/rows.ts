// Which array holds the rows, and its elements reduced to RetornoRow (SPEC §1.2). A bare top-level
// array streams; in a wrapped object the rows array is the first property whose value is an array
// of objects only, which is certain only once it ends, so a wrapped candidate's rows are kept
// (already reduced) until its `]`, then released.
import type { RetornoRow } from '../../types.js';
import { badInput } from '../../errors.js';
import {
  BUILTIN_COLUMN_NAMES,
  CANDIDATE_TEXTS,
  hasColumnNameShape,
  isBlank,
  ROLES,
  unrecognisedHeader,
  type ColumnNames,
  type HeaderCandidate,
  type Role,
} from '../columns.js';
import { MAX_CELL_CHARS } from '../limits.js';
import { invalid, NO_ROWS_ARRAY, ROWS_NOT_OBJECTS, tooLong } from './errors.js';
import { needsRawNumbers, rawNumberTokens, valueText } from './values.js';

export class RowsCollector {
  /** An array is being read as the rows array. */
  candidate = false;
  private found = false;
  private wrapped = false;
  private elements = 0;
  private usable = false;
  /** The rows array had rows but not the required roles: its first row's keys, for the error. */
  private rolesMissing: HeaderCandidate | null = null;
  private firstKeys: string[] | null = null;
  /** Every key of the first row plays a role or has a column name's shape. */
  private firstKeysHeaderLike = true;
  private pending: RetornoRow[] = [];
  private out: RetornoRow[] = [];
  private readonly roles: RoleCache;

  constructor(private readonly names: ColumnNames = BUILTIN_COLUMN_NAMES) {
    this.roles = new RoleCache(names);
  }

  /** Whether an array opened at this point could be the rows array. */
  open(): boolean {
    return !this.found && !this.candidate;
  }

  begin(wrapped: boolean): void {
    this.firstKeys = null;
    this.firstKeysHeaderLike = true;
    this.candidate = true;
    this.wrapped = wrapped;
    this.elements = 0;
    this.usable = false;
    this.pending = [];
  }

  /** The candidate held something other than an object: in a wrapper, look further. */
  drop(): void {
    if (!this.wrapped) throw badInput.unreadableRetorno(ROWS_NOT_OBJECTS);
    this.candidate = false;
    this.elements = 0;
    this.usable = false;
    this.pending = [];
  }

  /** The candidate's `]`: it is the rows array. */
  close(): void {
    this.candidate = false;
    this.found = true;
    // Judged in end(), so a syntax error later in the file takes precedence.
    if (this.elements > 0 && !this.usable) this.rolesMissing = this.headerCandidate();
    else this.release();
  }

  end(): void {
    if (!this.found) throw badInput.unreadableRetorno(NO_ROWS_ARRAY);
    if (this.rolesMissing) {
      throw badInput.unreadableRetorno(unrecognisedHeader('na lista de linhas', this.rolesMissing, this.names));
    }
  }

  take(): RetornoRow[] {
    const rows = this.out;
    this.out = [];
    return rows;
  }

  /**
   * Parses elements that lie in `buf` separated only by commas and white space, in one JSON.parse.
   * `suspect`: one of their strings has more bytes than a cell may have characters.
   */
  addElements(buf: Buffer, starts: readonly number[], ends: readonly number[], suspect: boolean): void {
    const first = starts[0]!;
    const last = ends[ends.length - 1]!;
    const parsed: unknown = JSON.parse(`[${buf.toString('utf8', first, last)}]`);
    if (!Array.isArray(parsed) || parsed.length !== starts.length) throw invalid();
    if (suspect) assertCellSized(parsed);
    this.elements += parsed.length;
    for (let k = 0; k < parsed.length; k++) {
      const element = parsed[k] as Record<string, unknown>;
      let raw: Map<string, string> | undefined;
      if (needsRawNumbers(element)) raw = rawNumberTokens(buf.toString('utf8', starts[k]!, ends[k]!));
      this.addRow(element, raw);
    }
  }

  /**
   * Elements the scanner parsed itself (a span of whole elements): objects whose strings are all
   * within a cell's size and whose numbers JSON.parse kept exactly (the scanner checks both).
   */
  addParsed(elements: readonly Record<string, unknown>[]): void {
    this.elements += elements.length;
    for (const element of elements) this.addRow(element, undefined);
  }

  private addRow(element: Record<string, unknown>, raw: Map<string, string> | undefined): void {
    if (this.firstKeys === null) {
      // Blank keys are skipped, as blank header cells are.
      const keys = Object.keys(element).filter((key) => key.trim() !== '');
      this.firstKeys = keys.slice(0, CANDIDATE_TEXTS).map((key) => key.slice(0, 200));
      this.firstKeysHeaderLike = keys.every((key) => this.roles.slotOf(key) !== -1 || hasColumnNameShape(key));
    }
    const values: (string | null)[] = [null, null, null, null, null, null];
    for (const key of Object.keys(element)) {
      const slot = this.roles.slotOf(key);
      if (slot === -1 || values[slot] !== null) continue; // the first key of a role wins
      values[slot] = valueText(element[key], raw?.get(key));
    }
    if (!this.usable && values[2] !== null && values[3] !== null && values[4] !== null) {
      this.usable = true;
      if (!this.wrapped && this.pending.length > 0) this.release();
    }
    if (isBlank(values)) return;
    const row: RetornoRow = {
      registro: values[0] ?? null,
      linha: values[1] ?? null,
      codigo: values[2] ?? '',
      campo: values[3] ?? '',
      mensagem: values[4] ?? '',
      conteudo: values[5] ?? '',
    };
    if (this.usable && !this.wrapped) this.out.push(row);
    else this.pending.push(row);
  }

  private release(): void {
    for (const row of this.pending) this.out.push(row);
    this.pending = [];
  }

  private headerCandidate(): HeaderCandidate {
    const texts = this.firstKeys ?? [];
    const roles = new Set<Role>();
    for (const key of texts) {
      const slot = this.roles.slotOf(key);
      if (slot >= 0) roles.add(ROLES[slot]!);
    }
    return { texts, roles, headerLike: this.firstKeysHeaderLike };
  }
}

/** Every string (key or value) within SPEC §5's cell limit; an explicit stack, as nesting may be deep. */
function assertCellSized(value: unknown): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') {
      if (item.length > MAX_CELL_CHARS) throw tooLong();
    } else if (Array.isArray(item)) {
      for (const element of item) stack.push(element);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, element] of Object.entries(item)) {
        if (key.length > MAX_CELL_CHARS) throw tooLong();
        stack.push(element);
      }
    }
  }
}

/** Role slot (ROLES order) of each key seen, so each distinct key is normalised once. */
class RoleCache {
  private readonly cache = new Map<string, number>();

  constructor(private readonly names: ColumnNames) {}

  slotOf(key: string): number {
    let slot = this.cache.get(key);
    if (slot === undefined) {
      const role: Role | undefined = this.names.roleOf(key);
      slot = role === undefined ? -1 : ROLES.indexOf(role);
      // Rows with ever-new keys must not grow the cache without bound.
      if (this.cache.size < 10_000) this.cache.set(key, slot);
    }
    return slot;
  }
}
