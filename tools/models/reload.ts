/** What the backend's repository load API answered, as one line per version. */
export interface ReloadResult {
  ok: boolean
  lines: string[]
}

interface LoadAnswer {
  error?: string
  versions?: Array<{ version: number; state: string; reason?: string }>
}

/** Asks the backend to (re)load a model from the repository: POST /v2/repository/models/{model}/load with ADMIN_TOKEN. */
export const reloadModel = async (model: string, backendUrl: string, token: string | undefined): Promise<ReloadResult> => {
  if (!token) return { ok: false, lines: ['the repository API needs the backend\'s ADMIN_TOKEN: pass --token or set ADMIN_TOKEN (start the stack with ADMIN_TOKEN=… npm start)'] }
  const url = `${backendUrl.replace(/\/+$/, '')}/v2/repository/models/${encodeURIComponent(model)}/load`
  let res: Response
  try {
    res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(120_000) })
  } catch (err) {
    return { ok: false, lines: [`no answer from ${url}: ${(err as Error).message}`] }
  }
  const body = (await res.json().catch(() => ({}))) as LoadAnswer
  const versions = (body.versions ?? []).map((v) => `${model} version ${v.version}: ${v.state}${v.reason ? ` (${v.reason})` : ''}`)
  if (res.ok) return { ok: true, lines: versions.length > 0 ? versions : [`${model}: loaded`] }
  const why = res.status === 401 || res.status === 403 ? ' (is --token the backend\'s ADMIN_TOKEN? unset there, the repository API is off)' : ''
  return { ok: false, lines: [`${res.status}: ${body.error ?? 'no error message'}${why}`, ...versions] }
}
