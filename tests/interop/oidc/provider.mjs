// A real OpenID provider for the tests: `node provider.mjs PORT KEYS_JSON`.
// KEYS_JSON is a file holding {"keys": [private JWKs]}; the first signs, all are published.
// Issues JWT access tokens for the resource FollowGraph checks, by the client credentials grant.
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const [port, keysFile] = process.argv.slice(2);
const jwks = JSON.parse(readFileSync(keysFile, 'utf8'));
const issuer = `http://127.0.0.1:${port}`;
const resource = 'urn:followgraph:api';

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'fg-client',
      client_secret: 'fg-client-secret-that-is-long-enough',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
    },
  ],
  jwks,
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: 'admin',
        audience: 'followgraph-api',
        accessTokenFormat: 'jwt',
        accessTokenTTL: 600,
        jwt: { sign: { alg: jwks.keys[0].alg } },
      }),
    },
  },
});

provider.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});
