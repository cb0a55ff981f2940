import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openApiDocument } from '../../../edge/openapi.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const REDOCLY = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js')

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number }
  problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }>
}

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'openapi-lint-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** `redocly lint` of a document with the repo's redocly.yaml (recommended rules): its exit code and JSON report. */
const lint = async (name: string, document: object): Promise<{ code: number; report: LintReport }> => {
  const file = join(dir, name)
  await writeFile(file, JSON.stringify(document, null, 2))
  const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile(
      process.execPath,
      [REDOCLY, 'lint', '--config', join(ROOT, 'redocly.yaml'), '--format', 'json', file],
      // No telemetry, no update check: the lint must not need the network.
      { cwd: dir, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', CI: 'true' }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout }),
    )
  })
  return { code, report: JSON.parse(stdout) as LintReport }
}

const summary = (report: LintReport) => report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`)

describe('redocly lint (recommended rules)', () => {
  it('passes the served document with no errors and no warnings', async () => {
    const { code, report } = await lint('openapi.json', openApiDocument())
    expect(summary(report)).toEqual([])
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 })
    expect(code).toBe(0)
  })

  it('fails a document that lost an operationId or its license, so the clean result above means something', async () => {
    const broken = structuredClone(openApiDocument()) as unknown as { info: { license?: object }; paths: Record<string, Record<string, { operationId?: string }>> }
    delete broken.paths['/v1/models'].get.operationId
    delete broken.info.license
    const { code, report } = await lint('broken.json', broken)
    expect(code).not.toBe(0)
    expect(report.problems.map((p) => [p.severity, p.ruleId])).toEqual(expect.arrayContaining([['error', 'operation-operationId'], ['error', 'info-license']]))
  })

  it('fails a reference to a schema the document does not have', async () => {
    const broken = structuredClone(openApiDocument()) as unknown as { components: { schemas: Record<string, unknown> } }
    delete broken.components.schemas.Rollout
    const { code, report } = await lint('dangling.json', broken)
    expect(code).not.toBe(0)
    expect(report.problems.map((p) => p.ruleId)).toContain('no-unresolved-refs')
  })
})
