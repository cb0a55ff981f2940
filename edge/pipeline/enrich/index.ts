import type { Feature, FeatureSpec, FeatureValue } from '../../../shared/feature-spec.ts'
import { Problem } from '../../problem.ts'
import type { PredictableModel } from '../../backend-client/catalog.ts'
import type { Stage } from '../stage.ts'
import type { ValidateVariables } from '../validate/index.ts'
import type { FeatureRead, FeatureReader } from '../../stores/features/cached.ts'
import { convertStored } from './convert.ts'

/** Response header set (to "1") only when entity features were not read fresh from the store. */
export const FEATURES_DEGRADED_HEADER = 'x-features-degraded'

export interface EnrichVariables {
  /** Set when entity features came from defaults because the store was slow or down. */
  featuresDegraded: boolean
}

type EnrichNeeds = ValidateVariables & { model: PredictableModel; isolate: { features: FeatureReader } }

/** The entity features of a spec that share one entity and key: one store read per request. */
interface EntityGroup {
  entity: string
  key: string
  features: Array<{ feature: Feature; overridable: boolean }>
}

const groupsBySpec = new WeakMap<FeatureSpec, EntityGroup[]>()

/** The spec's entity features grouped by (entity, key), computed once per spec object. */
export const entityGroups = (spec: FeatureSpec): EntityGroup[] => {
  let groups = groupsBySpec.get(spec)
  if (groups) return groups
  const byId = new Map<string, EntityGroup>()
  for (const feature of spec.features) {
    if (feature.source === 'request') continue
    const { entity, key, overridable } = feature.source
    const id = `${entity}\u0000${key}`
    let group = byId.get(id)
    if (!group) byId.set(id, (group = { entity, key, features: [] }))
    group.features.push({ feature, overridable })
  }
  groups = [...byId.values()]
  groupsBySpec.set(spec, groups)
  return groups
}

/**
 * Fills each instance's entity features (e.g. the `user` entity by `entity.user_id`) from the
 * isolate's feature store: one read per entity per request, through its cache. Stored strings are
 * converted by feature type; a value that does not fit the spec is dropped. A request value
 * stays only where the spec marks the feature `overridable`.
 *
 * Anything not filled is left missing, so the spec's default applies downstream. When the store
 * failed, timed out, was skipped by its circuit breaker or held a bad value, the request still
 * goes on, with `featuresDegraded` set and `X-Features-Degraded: 1`. An unknown entity id is not
 * degraded: defaults apply silently. A required entity feature without a default that cannot be
 * filled is refused: 503 when the store is degraded, 422 when the entity lacks it.
 */
export const enrich = (): Stage<EnrichNeeds, EnrichVariables> =>
  async function enrich(c, next) {
    const predict = c.get('predict')
    const groups = entityGroups(c.get('model').spec)
    let degraded = false
    if (groups.length > 0) {
      const reader = c.get('isolate').features
      const reads = await Promise.all(groups.map((group) => readGroup(reader, group, predict.entity, predict.instances)))
      let instances: Array<Record<string, FeatureValue>> | undefined
      for (let g = 0; g < groups.length; g++) {
        const read = reads[g]
        if (read === undefined) continue
        if (read.degraded) degraded = true
        for (const { feature, overridable } of groups[g].features) {
          const raw = read.values[feature.name]
          if (raw === undefined) continue
          const value = convertStored(feature, raw)
          if (value === undefined) {
            degraded = true
            continue
          }
          // Object.assign, not a spread: V8 gives a spread copy that then gains properties a
          // fresh hidden class every time, ~4 µs per instance.
          instances ??= predict.instances.map((instance) => Object.assign({}, instance))
          for (const instance of instances) if (!overridable || instance[feature.name] === undefined) instance[feature.name] = value
        }
      }
      if (instances) c.set('predict', { ...predict, instances })
      refuseUnfilled(groups, instances ?? predict.instances, degraded)
    }
    c.set('featuresDegraded', degraded)
    await next()
    // A later refusal says it too.
    if (degraded) c.res.headers.set(FEATURES_DEGRADED_HEADER, '1')
  }

const readGroup = (
  reader: FeatureReader,
  group: EntityGroup,
  ids: Record<string, string> | undefined,
  instances: ReadonlyArray<Record<string, FeatureValue>>,
): Promise<FeatureRead> | undefined => {
  const id = ids?.[group.key]
  if (id === undefined) return undefined
  // Every instance overrides every feature of this entity: there is nothing to read.
  if (instances.every((instance) => group.features.every(({ feature }) => instance[feature.name] !== undefined))) return undefined
  return reader.read(group.entity, id)
}

/** A required entity feature with no default that stayed missing cannot be encoded. */
const refuseUnfilled = (groups: EntityGroup[], instances: ReadonlyArray<Record<string, FeatureValue>>, degraded: boolean): void => {
  for (const { entity, key, features } of groups) {
    for (const { feature } of features) {
      if (!feature.required || feature.default !== undefined) continue
      if (instances.every((instance) => instance[feature.name] !== undefined)) continue
      if (degraded) {
        throw new Problem(503, 'Service Unavailable', `the ${entity} features are unavailable right now and "${feature.name}" has no default`, {
          slug: 'features-unavailable',
          headers: { 'retry-after': '1', [FEATURES_DEGRADED_HEADER]: '1' },
        })
      }
      throw new Problem(422, 'Unprocessable Content', `the ${entity} given by entity.${key} has no "${feature.name}" and the feature has no default`, {
        slug: 'entity-features-missing',
        errors: [{ path: `entity.${key}`, message: `has no stored "${feature.name}" (required, no default)` }],
      })
    }
  }
}
