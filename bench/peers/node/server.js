'use strict'
// FollowGraph's fans page as a JavaScript team would serve it: the Node peer of `make bench`.
//
// Fastify + Mercurius with graphql-jit (`jit: 1`: a query is compiled after its first run; GraphQL
// Yoga 5 with @envelop/graphql-jit, the same resolvers on node:http, spent 2 to 4 times the CPU per
// page in a side-by-side try on this page, so the peer is Mercurius),
// ioredis with auto-pipelining, DataLoader per request, fast-jwt (HS256, verified tokens cached
// until they expire). It serves the subset of FollowGraph's schema the benchmark asks for:
//
//   Query.user(userId) -> User { userId name fans(first, after) {
//     totalCount edges { cursor followedAt relationship node { userId name } } pageInfo } }
//
// with FollowGraph's keys, cursors, rules (the owner's hideFans and locked settings and blocks
// decide whether a viewer sees the list) and Lua scripts (PAGE, PROFILES; the harness passes their
// sources from followgraph.store.graph.scripts, so both servers run the same scripts, loaded with
// SCRIPT LOAD and called with EVALSHA). A page costs the round trips FollowGraph's costs: the
// user's profile, the PAGE script, then the viewer's two ZMSCOREs + PROFILES in one write (two
// loaders dispatched in the same tick, auto-pipelined). Profiles are read on every page: ioredis
// keeps no client-side cache of them, where FollowGraph keeps them until Redis says they changed.
//
// Environment: PORT, REDIS_URL, JWT_SECRET, SCRIPTS_FILE (JSON {page, profiles}),
// KEY_PREFIX (default "fg:").

const fs = require('node:fs')
const Fastify = require('fastify')
const mercurius = require('mercurius')
const Redis = require('ioredis')
const DataLoader = require('dataloader')
const { createVerifier } = require('fast-jwt')
const { blake2b } = require('blakejs')

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback
  if (value === undefined || value === '') throw new Error(`${name} is missing.`)
  return value
}

const PORT = Number(env('PORT'))
const REDIS_URL = env('REDIS_URL')
const JWT_SECRET = env('JWT_SECRET')
const SCRIPTS = JSON.parse(fs.readFileSync(env('SCRIPTS_FILE'), 'utf8'))
const PREFIX = env('KEY_PREFIX', 'fg:')
const DEFAULT_PAGE_SIZE = 20
const MAX_PAGE_SIZE = 100
const USER_ID = /^[A-Za-z0-9_-]{1,64}$/

// -- keys (followgraph/store/keys.py) ----------------------------------------------------------
const userKey = (id) => `${PREFIX}{u:${id}}`
const keys = {
  following: (id) => `${userKey(id)}:following`,
  fans: (id) => `${userKey(id)}:fans`,
  profile: (id) => `${userKey(id)}:profile`,
  blocking: (id) => `${userKey(id)}:blocking`
}

// -- cursors (followgraph/store/cursor.py) -----------------------------------------------------
const CURSOR_VERSION = '1'
const DIGEST_SIZE = 6
const MAX_CURSOR_LENGTH = 200
const MALFORMED = 'Malformed cursor: pass a cursor exactly as a previous page returned it.'

const digest = (listId, body) =>
  Buffer.from(blake2b(Buffer.concat([Buffer.from(listId), Buffer.from([0]), body]), undefined, DIGEST_SIZE))

function encodeCursor (listId, at, member) {
  const body = Buffer.from(`${CURSOR_VERSION}|${at}|${member}`)
  return Buffer.concat([digest(listId, body), body]).toString('base64url')
}

function decodeCursor (token, listId) {
  if (typeof token !== 'string' || !token || token.length > MAX_CURSOR_LENGTH) throw inputError(MALFORMED)
  const raw = Buffer.from(token, 'base64url')
  const body = raw.subarray(DIGEST_SIZE)
  const text = body.toString('latin1')
  const first = text.indexOf('|')
  const second = text.indexOf('|', first + 1)
  if (first < 0 || second < 0 || text.slice(0, first) !== CURSOR_VERSION) throw inputError(MALFORMED)
  const at = text.slice(first + 1, second)
  if (!/^[0-9]+$/.test(at)) throw inputError(MALFORMED)
  if (!raw.subarray(0, DIGEST_SIZE).equals(digest(listId, body))) {
    throw inputError('This cursor was not issued for this list (or it was altered).')
  }
  return { at, member: body.subarray(second + 1).toString('utf8') }
}

function inputError (message) {
  return new mercurius.ErrorWithProps(message, { code: 'BAD_USER_INPUT' })
}

// -- Redis: the store's scripts by SHA ---------------------------------------------------------
const redis = new Redis(REDIS_URL, { enableAutoPipelining: true, lazyConnect: true })
const shas = {}

async function loadScripts () {
  for (const name of ['page', 'profiles']) shas[name] = await redis.script('LOAD', SCRIPTS[name])
}

async function evalsha (name, keyList, args) {
  try {
    return await redis.evalsha(shas[name], keyList.length, ...keyList, ...args)
  } catch (error) {
    if (!String(error.message).startsWith('NOSCRIPT')) throw error
    await loadScripts()
    return redis.evalsha(shas[name], keyList.length, ...keyList, ...args)
  }
}

// A user's profile: {name, avatarUrl, createdAt}, or null when the user is not registered.
async function loadProfiles (ids) {
  const flat = await evalsha('profiles', ids.map(keys.profile), [])
  // PROFILES gives 6 values a user: name, avatarUrl, createdAt, then the settings.
  return ids.map((_, i) => (flat[6 * i + 2] === null ? null : { name: flat[6 * i] }))
}

function relationsLoader (viewer) {
  return async (ids) => {
    if (viewer === null) return ids.map(() => 'NONE')
    // Two plain ZMSCOREs, as FollowGraph reads them: auto-pipelining sends them in one write.
    const [out, back] = await Promise.all([
      redis.zmscore(keys.following(viewer), ...ids),
      redis.zmscore(keys.fans(viewer), ...ids)
    ])
    return ids.map((id, i) => {
      if (id === viewer) return 'SELF'
      if (out[i] !== null) return back[i] !== null ? 'MUTUAL' : 'FOLLOWING'
      return back[i] !== null ? 'FOLLOWED_BY' : 'NONE'
    })
  }
}

// -- schema and resolvers ----------------------------------------------------------------------
const schema = `
  scalar DateTime
  enum Relationship { SELF MUTUAL FOLLOWING FOLLOWED_BY NONE }
  type PageInfo { hasNextPage: Boolean! hasPreviousPage: Boolean! startCursor: String endCursor: String }
  type FollowEdge { cursor: String! node: User! followedAt: DateTime! relationship: Relationship! }
  type FollowConnection { totalCount: Int! edges: [FollowEdge!]! pageInfo: PageInfo! }
  type User { userId: ID! name: String fans(first: Int = null, after: String = null): FollowConnection! }
  type Query { user(userId: ID!): User }
`

const resolvers = {
  DateTime: {
    serialize: (ms) => new Date(ms).toISOString()
  },
  Query: {
    async user (_, { userId }, { loaders }) {
      if (!USER_ID.test(userId)) throw inputError(`Invalid user id: use 1 to 64 characters of A-Z, a-z, 0-9, _ and -.`)
      const profile = await loaders.profiles.load(userId)
      return profile === null ? null : { userId, profile }
    }
  },
  User: {
    name ({ userId, profile }, _, { loaders }) {
      if (profile !== undefined) return profile === null ? null : profile.name
      return loaders.profiles.load(userId).then((p) => (p === null ? null : p.name))
    },
    async fans ({ userId }, { first, after }, { viewer }) {
      const limit = first ?? DEFAULT_PAGE_SIZE
      if (limit < 0 || limit > MAX_PAGE_SIZE) {
        throw inputError(`\`first\` must be between 0 and ${MAX_PAGE_SIZE}, got ${limit}.`)
      }
      const listId = `fans:${userId}`
      const cursor = after == null ? null : decodeCursor(after, listId)
      const args = cursor === null ? ['first', '0', '', '', limit] : ['first', '1', cursor.at, cursor.member, limit]
      // For a viewer other than the owner, PAGE also reads what decides whether the owner shows the
      // list (hideFans, locked, blocks, whether the viewer is a fan); a list not shown has no rows.
      const [total, start, stop, flat, hidden] = viewer === userId
        ? await evalsha('page', [keys.fans(userId)], args)
        : await evalsha(
          'page',
          [keys.fans(userId), keys.profile(userId), keys.fans(userId), keys.blocking(userId)],
          [...args, viewer ?? '', 'hideFans']
        )
      if (hidden) return { total, start: 0, stop: total, edges: [] } // no next or previous page
      const edges = []
      for (let i = 0; i < flat.length; i += 2) {
        const member = flat[i]
        const at = Math.trunc(Number(flat[i + 1]))
        edges.push({ cursor: encodeCursor(listId, at, member), followedAt: at, userId: member })
      }
      return { total, start, stop, edges }
    }
  },
  FollowConnection: {
    totalCount: ({ total }) => total,
    pageInfo: ({ total, start, stop, edges }) => ({
      hasNextPage: stop < total,
      hasPreviousPage: start > 0,
      startCursor: edges.length ? edges[0].cursor : null,
      endCursor: edges.length ? edges[edges.length - 1].cursor : null
    })
  },
  FollowEdge: {
    node: ({ userId }) => ({ userId }),
    relationship: ({ userId }, _, { loaders }) => loaders.relations.load(userId)
  }
}

// -- authentication ----------------------------------------------------------------------------
const verify = createVerifier({
  key: JWT_SECRET,
  algorithms: ['HS256'],
  requiredClaims: ['exp', 'sub'],
  clockTolerance: 30,
  cache: 4096
})

function viewerOf (header) {
  if (header === undefined || header.trim() === '') return null
  const parts = header.trim().split(/\s+/)
  if (parts.length !== 2 || parts[0].toLowerCase() !== 'bearer') {
    throw new Error("Malformed Authorization header: expected 'Bearer <token>'.")
  }
  const { sub } = verify(parts[1])
  if (typeof sub !== 'string' || !USER_ID.test(sub)) {
    throw new Error("The token's subject (sub) is not a valid user id.")
  }
  return sub
}

// -- the server --------------------------------------------------------------------------------
async function main () {
  await redis.connect()
  await loadScripts()
  const app = Fastify({ logger: false })
  app.decorateRequest('viewer', null)
  app.addHook('onRequest', async (request, reply) => {
    if (request.url !== '/graphql') return
    try {
      request.viewer = viewerOf(request.headers.authorization)
    } catch (error) {
      reply.code(401).send({ errors: [{ message: error.message }] })
    }
  })
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.register(mercurius, {
    schema,
    resolvers,
    jit: 1,
    graphiql: false,
    context: (request) => ({
      viewer: request.viewer,
      loaders: {
        profiles: new DataLoader(loadProfiles),
        relations: new DataLoader(relationsLoader(request.viewer))
      }
    })
  })
  await app.listen({ host: '127.0.0.1', port: PORT })
  const stop = async () => {
    await app.close()
    redis.disconnect()
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
