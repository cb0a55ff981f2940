import type { Catalog } from '../scenarios/payloads.js'

const CATALOG_TIMEOUT_MS = 10_000

/** The model's catalog entry on the target (`GET /v1/models/{model}`): its feature spec and pinnable versions. */
export const fetchCatalog = async (target: string, apiKey: string, model: string): Promise<Catalog> => {
  const url = `${target}/v1/models/${encodeURIComponent(model)}`
  const res = await fetch(url, { headers: { 'x-api-key': apiKey }, signal: AbortSignal.timeout(CATALOG_TIMEOUT_MS) })
  const text = await res.text()
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}: ${text.slice(0, 300)}`)
  const catalog = JSON.parse(text) as Partial<Catalog>
  if (!Array.isArray(catalog.features)) throw new Error(`${url} lists no feature spec: model "${model}" takes no predict requests`)
  return { name: catalog.name ?? model, features: catalog.features, rollout: { pinnable: catalog.rollout?.pinnable ?? [] } }
}
