// What a signed-in person may do (SPEC §8), from the groups or roles claim of the provider:
// `retorno` (the upload routes) and `consulta` (the query route). Default deny: no matching value,
// no permission.
import type { SignInConfig } from '@censo/shared';

export type Permission = 'retorno' | 'consulta';

/** Every permission, in the order /auth/sessao lists them. */
export const PERMISSIONS: readonly Permission[] = ['retorno', 'consulta'];

/**
 * The claim's values: a list (Entra, Keycloak's group mapper) or a space-separated string (some
 * providers write roles as scopes are written). A dotted name that is not itself a claim is read as
 * a path (Keycloak's `realm_access.roles`); names with dots (`https://example.gov.br/roles`) win.
 */
export function rolesOf(claims: Readonly<Record<string, unknown>>, claim: string): string[] {
  let value: unknown = claims[claim];
  if (value === undefined && claim.includes('.')) {
    value = claim.split('.').reduce<unknown>((node, key) => (isRecord(node) ? node[key] : undefined), claims);
  }
  if (typeof value === 'string') return value.split(/\s+/).filter((role) => role.length > 0);
  if (Array.isArray(value)) return value.filter((role): role is string => typeof role === 'string');
  return [];
}

export function permissionsOf(roles: readonly string[], config: Pick<SignInConfig, 'rolesRetorno' | 'rolesConsulta'>): Permission[] {
  const granted = (allowed: readonly string[]) => roles.some((role) => allowed.includes(role));
  return PERMISSIONS.filter((permission) => granted(permission === 'retorno' ? config.rolesRetorno : config.rolesConsulta));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
