import { createRandom } from './random.js'

/**
 * Predict requests generated from a model's feature spec as the target's catalog serves it
 * (`GET /v1/models/{model}`), so a load run exercises the whole pipeline — entity look-ups that
 * hit and miss, pinned and A/B-routed users, inputs the edge repairs or refuses — rather than
 * one cached body. Plain ESM without Node APIs: k6 imports it by relative path.
 */

/**
 * A feature as the catalog lists it (the parsed feature spec).
 * @typedef {object} CatalogFeature
 * @property {string} name
 * @property {'number' | 'integer' | 'category' | 'boolean'} type
 * @property {number} [min]
 * @property {number} [max]
 * @property {string[]} [categories]
 * @property {boolean} [required]
 * @property {'request' | { entity: string, key: string }} [source]
 */

/**
 * What the payloads need from `GET /v1/models/{model}`.
 * @typedef {object} Catalog
 * @property {string} name
 * @property {CatalogFeature[]} features
 * @property {{ pinnable: number[] }} rollout
 */

/**
 * Shares of the traffic, each in [0, 1]. Identity: a known entity id, else an X-Experiment-Key
 * user without an entity, else an unknown entity id. Input: refused, else fixed, else valid.
 * @typedef {object} Mix
 * @property {number} knownEntityShare requests naming an entity id the feature store holds
 * @property {number} experimentKeyShare requests without an entity, sticky by X-Experiment-Key
 * @property {number} pinnedShare requests pinning a version with X-Model-Version
 * @property {number} fixShare inputs the edge has to repair (numeric strings, layered percent-encoding, whitespace)
 * @property {number} refuseShare inputs the edge has to refuse with a 400 (counted apart from errors)
 * @property {number} instances instances per request
 */

/** @typedef {'valid' | 'fixed' | 'refused'} PayloadKind */

/**
 * One generated request.
 * @typedef {object} Payload
 * @property {PayloadKind} kind
 * @property {string} body the JSON body as sent
 * @property {Record<string, string>} headers besides content-type and the API key
 * @property {number} expectedStatus 200, or the 400 a refused input must get
 * @property {string} [alteration] which repair or refusal the input carries
 * @property {Array<Record<string, unknown>>} instances the intended (valid) instances, before any alteration
 * @property {string} [entityId] the entity id sent, when one is
 */

/** @type {Mix} */
export const DEFAULT_MIX = {
  knownEntityShare: 0.6,
  experimentKeyShare: 0.2,
  pinnedShare: 0.1,
  fixShare: 0.05,
  refuseShare: 0.02,
  instances: 1,
}

/**
 * The user ids the local stack's feature store is seeded with (edge/stores/features/demo-seed.json,
 * `DEFAULT_FEATURE_SEED`; a test holds the two equal). A deployed store has its own: pass them.
 */
export const SEEDED_USER_IDS = ['u-1', 'u-2', 'u-3', 'u-4', 'u-5']

/** Distinct experiment users and unknown entities: enough to spread over the arms, few enough to repeat. */
const EXPERIMENT_USERS = 1_000
const UNKNOWN_ENTITIES = 1_000_000

/** @param {number} x */
const round2 = (x) => Math.round(x * 100) / 100

/**
 * A value typical of a numeric range rather than uniform over it: spec ranges are wide bounds
 * (income up to 5,000,000), so values cluster in the lower part, as real applicants do.
 * @param {import('./random.js').Random} random
 * @param {CatalogFeature} f
 */
const numericValue = (random, f) => {
  const min = f.min ?? 0
  const max = f.max ?? min + 1
  const span = max - min
  const x = Math.min(max, Math.max(min, min + span * (0.15 + 0.1 * random.normal())))
  return f.type === 'integer' ? Math.round(x) : round2(x)
}

/**
 * @param {import('./random.js').Random} random
 * @param {CatalogFeature} f
 * @returns {number | string | boolean}
 */
const featureValue = (random, f) => {
  if (f.type === 'category') return random.pick(f.categories ?? [])
  if (f.type === 'boolean') return random.chance(0.15)
  return numericValue(random, f)
}

/** @param {CatalogFeature} f */
const fromRequest = (f) => f.source === undefined || f.source === 'request'

/**
 * @param {import('./random.js').Random} random
 * @param {CatalogFeature[]} features
 */
const instance = (random, features) => {
  /** @type {Record<string, unknown>} */
  const out = {}
  for (const f of features) {
    // Optional features are sometimes left out, as clients do.
    if (f.required === false && random.chance(0.1)) continue
    out[f.name] = featureValue(random, f)
  }
  return out
}

/**
 * An alteration changes the first instance of `rows` (in place, or by replacing it) and names
 * itself; `undefined` when the spec has no feature it applies to.
 * @typedef {(random: import('./random.js').Random, rows: unknown[], features: CatalogFeature[]) => string | undefined} Alteration
 */

/**
 * @param {CatalogFeature[]} features
 * @param {CatalogFeature['type'][]} types
 * @param {Record<string, unknown>} row
 */
const presentOf = (features, types, row) => features.filter((f) => types.includes(f.type) && row[f.name] !== undefined)

/**
 * An alteration of one feature, picked among those of `types` present in the first instance.
 * @param {string} name
 * @param {CatalogFeature['type'][]} types
 * @param {(value: unknown, f: CatalogFeature, random: import('./random.js').Random) => unknown} change
 * @returns {Alteration}
 */
const onFeature = (name, types, change) => (random, rows, features) => {
  const row = /** @type {Record<string, unknown>} */ (rows[0])
  const candidates = presentOf(features, types, row)
  if (candidates.length === 0) return undefined
  const f = random.pick(candidates)
  row[f.name] = change(row[f.name], f, random)
  return `${name}:${f.name}`
}

/** @type {Alteration[]} Inputs the edge repairs without guessing (counted in X-Input-Normalized). */
const FIXES = [
  onFeature('numeric-string', ['number', 'integer'], (value) => String(value)),
  // Percent-encoded twice, a leading space inside: `%2520north` → `%20north` → ` north` → `north`.
  onFeature('percent-encoded-twice', ['category'], (value) => encodeURIComponent(encodeURIComponent(` ${String(value)}`))),
  onFeature('whitespace', ['category'], (value) => ` ${String(value)} `),
]

/** @type {Alteration[]} Inputs the edge must refuse with a 400. */
const REFUSALS = [
  onFeature('out-of-range', ['number', 'integer'], (_value, f, random) => (f.max ?? 0) + 1 + random.int(0, 100)),
  // Booleans are strict: the edge never reads "true" as true.
  onFeature('boolean-string', ['boolean'], (value) => String(value)),
  (_random, rows) => {
    rows[0] = JSON.stringify(rows[0])
    return 'json-encoded-twice:instances[0]'
  },
]

/**
 * @param {import('./random.js').Random} random
 * @param {Alteration[]} alterations
 * @param {unknown[]} rows
 * @param {CatalogFeature[]} features
 */
const alter = (random, alterations, rows, features) => {
  const start = random.int(0, alterations.length - 1)
  for (let i = 0; i < alterations.length; i++) {
    const applied = alterations[(start + i) % alterations.length](random, rows, features)
    if (applied !== undefined) return applied
  }
  return undefined
}

/**
 * @typedef {object} PayloadOptions
 * @property {Catalog} catalog the target's `GET /v1/models/{model}` answer
 * @property {Partial<Mix>} [mix]
 * @property {number} [seed]
 * @property {string[]} [knownIds] entity ids the target's feature store holds
 */

/**
 * @typedef {object} Payloads
 * @property {string} path the predict path of the catalog's model
 * @property {() => Payload} next
 */

/**
 * A deterministic stream of predict requests for `catalog`'s model.
 * @param {PayloadOptions} options
 * @returns {Payloads}
 */
export const createPayloads = ({ catalog, mix = {}, seed = 1, knownIds = SEEDED_USER_IDS }) => {
  const shares = { ...DEFAULT_MIX, ...mix }
  const random = createRandom(seed)
  const requestFeatures = catalog.features.filter(fromRequest)
  const entityFeatures = catalog.features.filter((f) => !fromRequest(f))
  const entitySource = /** @type {{ entity: string, key: string } | undefined} */ (entityFeatures[0]?.source)
  // A required entity feature makes the entity id mandatory (the edge refuses a request without it).
  const entityRequired = entityFeatures.some((f) => f.required !== false)
  const pinnable = catalog.rollout.pinnable

  /** @param {string} id */
  const entityOf = (id) => (entitySource ? { entity: { [entitySource.key]: id }, entityId: id } : {})

  /** @returns {{ entity?: Record<string, string>, entityId?: string, headers: Record<string, string> }} */
  const identity = () => {
    const r = random.next()
    if (entitySource && r < shares.knownEntityShare && knownIds.length > 0) return { ...entityOf(random.pick(knownIds)), headers: {} }
    if (!entitySource || r < shares.knownEntityShare + shares.experimentKeyShare) {
      const user = `exp-${random.int(1, EXPERIMENT_USERS)}`
      // The edge routes by the entity id before X-Experiment-Key: where the id is mandatory the
      // experiment user sends the same key as both, so either way it lands in one arm.
      return { ...(entityRequired ? entityOf(user) : {}), headers: { 'X-Experiment-Key': user } }
    }
    return { ...entityOf(`anon-${random.int(1, UNKNOWN_ENTITIES)}`), headers: {} }
  }

  return {
    path: `/v1/models/${encodeURIComponent(catalog.name)}/predict`,
    next: () => {
      const who = identity()
      const headers = { ...who.headers }
      if (pinnable.length > 0 && random.chance(shares.pinnedShare)) headers['X-Model-Version'] = String(random.pick(pinnable))
      const instances = Array.from({ length: Math.max(1, shares.instances) }, () => instance(random, requestFeatures))
      /** @type {unknown[]} */
      const sent = instances.map((row) => ({ ...row }))
      const r = random.next()
      /** @type {PayloadKind} */
      let kind = 'valid'
      let alteration
      if (r < shares.refuseShare) {
        alteration = alter(random, REFUSALS, sent, requestFeatures)
        if (alteration !== undefined) kind = 'refused'
      } else if (r < shares.refuseShare + shares.fixShare) {
        alteration = alter(random, FIXES, sent, requestFeatures)
        if (alteration !== undefined) kind = 'fixed'
      }
      const body = JSON.stringify(who.entity ? { instances: sent, entity: who.entity } : { instances: sent })
      return {
        kind,
        body,
        headers,
        expectedStatus: kind === 'refused' ? 400 : 200,
        ...(alteration !== undefined && { alteration }),
        instances,
        ...(who.entityId !== undefined && { entityId: who.entityId }),
      }
    },
  }
}
