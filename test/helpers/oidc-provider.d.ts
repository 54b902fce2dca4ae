// The little of oidc-provider 9 (untyped JavaScript) that the test authorization server uses.

declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ResourceServer {
    scope: string;
    audience?: string;
    accessTokenTTL?: number;
    accessTokenFormat?: 'jwt' | 'opaque';
  }

  export interface Context {
    oidc: {
      params?: Record<string, unknown>;
      client?: { clientId: string };
      entities: { AuthorizationCode?: { clientId: string; codeChallenge?: string; codeChallengeMethod?: string } };
    };
    status: number;
    body: unknown;
  }

  export interface IssuedToken {
    resourceServer: unknown;
    save(): Promise<string>;
  }

  export type Configuration = Record<string, unknown> & {
    features: Record<string, unknown> & {
      resourceIndicators: {
        enabled: boolean;
        defaultResource(ctx: Context, client: unknown, oneOf?: string[]): unknown;
        useGrantedResource(ctx: Context, model: unknown): boolean;
        getResourceServerInfo(ctx: Context, indicator: string, client: unknown): ResourceServer;
      };
    };
    formats?: {
      customizers: {
        jwt(ctx: Context | undefined, token: unknown, jwt: { header: unknown; payload: Record<string, unknown> }): void;
      };
    };
  };

  export const errors: {
    InvalidTarget: new () => Error;
    InvalidGrant: new (detail: string) => Error;
    InvalidRequest: new (detail: string) => Error;
  };

  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    on(event: 'grant.success', listener: (ctx: Context) => void): void;
    registerGrantType(name: string, handler: (ctx: Context) => Promise<void>, params: string[]): void;
    ClientCredentials: new (init: {
      client: unknown;
      scope?: string;
    }) => IssuedToken;
    ResourceServer: new (
      identifier: string,
      info: ResourceServer,
    ) => unknown;
  }
}
