import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { GENERATED_MODULE, buildConsole, consoleModule } from '../../../console/build.ts'

/**
 * The console is committed as the worker serves it (edge/console/assets.generated.ts), so that a
 * fresh clone bundles, typechecks and starts without a build step; this holds it to its source.
 */
describe('the console the worker serves', () => {
  it('is what a fresh Vite build of console/ makes (npm run console:build writes it)', async () => {
    const files = await buildConsole()
    expect(await readFile(GENERATED_MODULE, 'utf8'), 'edge/console/assets.generated.ts is stale: run npm run console:build').toBe(consoleModule(files))
  })

  it('is a page, its script, its stylesheet and its icon, with nothing inline', async () => {
    const files = await buildConsole()
    // Sorted once the hashes are out: the build orders by the hashed names, whose order varies.
    expect([...files.keys()].map((name) => name.replace(/-[A-Za-z0-9_-]{8}\./, '-<hash>.')).sort()).toEqual(['assets/favicon-<hash>.svg', 'assets/index-<hash>.css', 'assets/index-<hash>.js', 'index.html'])
    const html = files.get('index.html')!
    const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map(([tag]) => tag)
    expect(scripts).toEqual([expect.stringMatching(/^<script type="module" crossorigin src="\/console\/assets\/index-[^"]+\.js">$/)])
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=|javascript:|data:/i)
    // uPlot is bundled, not fetched: the page works offline.
    expect(files.get([...files.keys()].find((n) => n.endsWith('.js'))!)).toContain('uplot')
    expect(html).not.toMatch(/https?:\/\//)
  })
})
