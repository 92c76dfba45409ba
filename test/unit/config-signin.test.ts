// The sign-in settings of SPEC §8 and ACCESS_LOG: defaults, and a one-line ConfigError for each
// value the service could not run with safely.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@censo/shared';

const SIGN_IN = {
  OIDC_ISSUER: 'https://sso.seduc.example/realms/censo',
  OIDC_CLIENT_ID: 'censo-api',
  OIDC_CLIENT_SECRET: 'segredo',
  PUBLIC_URL: 'https://censo.seduc.example/',
  SESSION_SECRET: 'x'.repeat(32),
  OIDC_ROLES_RETORNO: 'censo-retorno, censo-admin',
};

describe('sign-in settings', () => {
  it('are off without OIDC_ISSUER, and the access log goes to stdout', () => {
    expect(loadConfig({})).toMatchObject({ signIn: null, accessLog: 'stdout' });
  });

  it('have the documented defaults and lists', () => {
    expect(loadConfig(SIGN_IN).signIn).toEqual({
      issuer: 'https://sso.seduc.example/realms/censo',
      clientId: 'censo-api',
      clientSecret: 'segredo',
      publicUrl: 'https://censo.seduc.example',
      sessionSecret: 'x'.repeat(32),
      scopes: 'openid profile email',
      rolesClaim: 'groups',
      rolesRetorno: ['censo-retorno', 'censo-admin'],
      rolesConsulta: [],
    });
  });

  it('take a public client (no secret), other scopes and claim, and an http issuer on loopback', () => {
    const signIn = loadConfig({
      ...SIGN_IN,
      OIDC_CLIENT_SECRET: '',
      OIDC_ISSUER: 'http://127.0.0.1:8080/',
      OIDC_SCOPES: 'openid  email groups',
      OIDC_ROLES_CLAIM: 'realm_access.roles',
      OIDC_ROLES_CONSULTA: 'leitura',
    }).signIn;
    expect(signIn).toMatchObject({
      clientSecret: null,
      scopes: 'openid email groups',
      rolesClaim: 'realm_access.roles',
      rolesConsulta: ['leitura'],
    });
    expect(loadConfig({ ...SIGN_IN, OIDC_ISSUER: 'http://localhost:8080' }).signIn?.issuer).toBe('http://localhost:8080');
  });

  it('write the access log to a file path when given one', () => {
    expect(loadConfig({ ACCESS_LOG: 'logs/acesso.log' }).accessLog).toBe(path.resolve('logs/acesso.log'));
  });

  it.each([
    [
      { ...SIGN_IN, OIDC_ISSUER: 'http://sso.seduc.example' },
      /OIDC_ISSUER must start with https:\/\/ \(http:\/\/ only for a loopback address\)/,
    ],
    [{ ...SIGN_IN, OIDC_ISSUER: 'sso.seduc.example' }, /OIDC_ISSUER is not a valid URL/],
    [{ ...SIGN_IN, PUBLIC_URL: 'http://censo.seduc.example' }, /PUBLIC_URL must start with https:\/\//],
    [{ ...SIGN_IN, PUBLIC_URL: 'https://censo.seduc.example/?a=1' }, /PUBLIC_URL must have no query or fragment/],
    [{ ...SIGN_IN, PUBLIC_URL: '' }, /PUBLIC_URL is required when OIDC_ISSUER is set/],
    [{ ...SIGN_IN, OIDC_CLIENT_ID: '' }, /OIDC_CLIENT_ID is required when OIDC_ISSUER is set/],
    [{ ...SIGN_IN, SESSION_SECRET: '' }, /SESSION_SECRET is required/],
    [{ ...SIGN_IN, SESSION_SECRET: 'curto' }, /SESSION_SECRET must be at least 32 characters/],
    [{ ...SIGN_IN, OIDC_SCOPES: 'profile email' }, /OIDC_SCOPES must include openid/],
    [{ ...SIGN_IN, OIDC_ROLES_RETORNO: ' , ' }, /neither OIDC_ROLES_RETORNO nor OIDC_ROLES_CONSULTA/],
    [{ OIDC_CLIENT_ID: 'censo-api' }, /OIDC_CLIENT_ID is set but OIDC_ISSUER is not/],
    [{ OIDC_ROLES_CONSULTA: 'x' }, /OIDC_ROLES_CONSULTA is set but OIDC_ISSUER is not/],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
