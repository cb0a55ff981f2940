import { createClient } from '../../clients/typescript/src/index.ts'
import type { Catalog } from '../scenarios/payloads.js'

const CATALOG_TIMEOUT_MS = 10_000

/** The model's catalog entry on the target (`GET /v1/models/{model}`, through the client package): its feature spec and pinnable versions. */
export const fetchCatalog = async (target: string, apiKey: string, model: string): Promise<Catalog> => {
  const client = createClient({ baseUrl: target, apiKey })
  const catalog = await client.models.describe(model, { timeoutMs: CATALOG_TIMEOUT_MS }).catch((err: unknown) => {
    throw new Error(`GET ${target}/v1/models/${model}: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
  })
  if (!Array.isArray(catalog.features)) throw new Error(`${target}/v1/models/${model} lists no feature spec: model "${model}" takes no predict requests`)
  return { name: catalog.name, features: catalog.features as Catalog['features'], rollout: { pinnable: catalog.rollout.pinnable ?? [] } }
}
