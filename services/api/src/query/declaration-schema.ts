// The shape of a query declaration, as a JSON Schema: the one description of the file format
// (docs/query.md prints it) and the one validator. Ajv's errors are turned into sentences that
// name the query and the property, so a typo in QUERIES_FILE reads as an instruction at start.
import { Ajv, type ErrorObject } from 'ajv';

/** Query and filter names; also the identifiers allowed in `columns` and `key`. */
export const NAME_PATTERN = '^[a-z_][a-z0-9_]{0,62}$';
export const FILTER_TYPES = ['integer', 'text', 'date'] as const;
export type FilterType = (typeof FILTER_TYPES)[number];

const identifierList = {
  type: 'array',
  items: { type: 'string', pattern: NAME_PATTERN },
  uniqueItems: true,
} as const;

export const declarationSchema = {
  $id: 'censo-query-declaration',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'sql', 'key', 'columns', 'filters'],
  properties: {
    name: { type: 'string', pattern: NAME_PATTERN },
    description: { type: 'string' },
    titulo: { type: 'string', minLength: 1 },
    descricao: { type: 'string' },
    sql: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    key: {
      anyOf: [
        { type: 'string', pattern: NAME_PATTERN },
        { ...identifierList, minItems: 1 },
      ],
    },
    columns: { ...identifierList, minItems: 1 },
    filters: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'type'],
        properties: {
          name: { type: 'string', pattern: NAME_PATTERN },
          type: { enum: [...FILTER_TYPES] },
          description: { type: 'string' },
          titulo: { type: 'string', minLength: 1 },
          descricao: { type: 'string' },
          required: { type: 'boolean' },
          notBefore: { type: 'string' },
        },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: false, strict: true }).compile(declarationSchema);

/** Returns why `value` is not a declaration (a sentence after `where`), or null when it is one. */
export function declarationProblem(value: unknown): string | null {
  if (validate(value)) return null;
  return describe(validate.errors?.[0], value);
}

function describe(error: ErrorObject | undefined, value: unknown): string {
  if (!error) return 'is not a valid declaration';
  // instancePath is a JSON pointer: '' | '/name' | '/filters/0/type' | '/columns/2'
  const [property, index, filterProperty] = error.instancePath.split('/').slice(1);
  if (property === undefined) {
    if (error.keyword === 'type') return 'a query declaration must be a JSON object';
    if (error.keyword === 'additionalProperties') return `unknown property "${String(error.params.additionalProperty)}"`;
    if (error.keyword === 'required') return `"${String(error.params.missingProperty)}" is required`;
  }
  if (property === 'filters' && index !== undefined) {
    const filter = (value as { filters: Record<string, unknown>[] }).filters[Number(index)];
    const label = typeof filter?.name === 'string' ? `filter "${filter.name}"` : 'filter';
    if (filterProperty === undefined) {
      if (error.keyword === 'type') return 'every filter must be an object';
      if (error.keyword === 'additionalProperties') return `filter property "${String(error.params.additionalProperty)}" is unknown`;
      if (error.keyword === 'required') return `${label}: "${String(error.params.missingProperty)}" is required`;
    }
    switch (filterProperty) {
      case 'name':
        return `filter "name" must match ${NAME_PATTERN}`;
      case 'type':
        return `${label} has type ${JSON.stringify(filter?.type)}, expected one of ${FILTER_TYPES.join(', ')}`;
      case 'description':
        return `${label} description must be a string`;
      case 'titulo':
        return `${label} titulo must be a non-empty string`;
      case 'descricao':
        return `${label} descricao must be a string`;
      case 'required':
        return `${label} required must be true or false`;
      case 'notBefore':
        return `${label} notBefore must be a filter name`;
    }
  }
  switch (property) {
    case 'name':
      return `"name" must match ${NAME_PATTERN}`;
    case 'description':
      return '"description" must be a string';
    case 'titulo':
      return '"titulo" must be a non-empty string';
    case 'descricao':
      return '"descricao" must be a string';
    case 'sql':
      return '"sql" must be a string or an array of strings';
    case 'filters':
      return '"filters" must be an array';
    case 'key':
    case 'columns':
      if (Array.isArray((value as Record<string, unknown>)[property]) && (value as Record<string, unknown[]>)[property]!.length === 0) {
        return `"${property}" must not be empty`;
      }
      if (error.keyword === 'uniqueItems') return `"${property}" has a repeated name`;
      // Lower-case identifiers only: they are quoted in the wrapping SELECT, and an unquoted name
      // in the declared SQL is folded to lower case by PostgreSQL, so both sides agree.
      return `"${property}" must be a list of lower-case identifiers (${NAME_PATTERN})`;
  }
  return `${error.instancePath || 'declaration'} ${error.message ?? 'is invalid'}`;
}
