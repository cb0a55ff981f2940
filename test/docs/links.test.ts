import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * The README and docs/ are what a newcomer follows: every relative link must land on a file (and
 * on a heading, for `#anchor` links into markdown), and every command a shell block shows must
 * name an npm script or a file that exists, so a move or a renamed script breaks this test
 * instead of the reader.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const SHELL_FENCES = new Set(['sh', 'bash', 'console', 'shell'])

/** GitHub's heading anchor: lowercase, punctuation dropped except `-`, `_` and spaces, spaces → `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-')
}

interface Line {
  readonly text: string
  readonly number: number
  /** The info string of the fenced block the line is in; undefined outside any block. */
  readonly fence: string | undefined
}

function lines(markdown: string): Line[] {
  const out: Line[] = []
  let fence: string | undefined
  markdown.split('\n').forEach((text, index) => {
    const open = /^\s*```(\S*)/.exec(text)
    if (open) {
      fence = fence === undefined ? open[1] : undefined
      return
    }
    out.push({ text, number: index + 1, fence })
  })
  return out
}

/** Anchors of a markdown document's headings, with GitHub's `-1`, `-2` suffixes for repeats. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const line of lines(markdown)) {
    const heading = line.fence === undefined ? /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line.text) : null
    if (!heading) continue
    const base = slug(heading[1])
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    out.add(count === 0 ? base : `${base}-${count}`)
  }
  return out
}

/** Problems with the relative links (inline `[text](target)` and images) outside code blocks. */
function brokenLinks(file: string, markdown: string, read: (path: string) => string | undefined): string[] {
  const problems: string[] = []
  for (const line of lines(markdown)) {
    if (line.fence !== undefined) continue
    // Inline code may show link syntax without being a link.
    const prose = line.text.replace(/`[^`]*`/g, '')
    for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1]
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
      const [path, anchor] = target.split('#', 2)
      const where = `${file}:${line.number}: ${target}`
      const resolved = path === '' ? file : join(dirname(file), decodeURIComponent(path))
      const text = read(resolved)
      if (text === undefined) {
        problems.push(`${where}: no such file`)
        continue
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchors(text).has(anchor)) {
        problems.push(`${where}: no heading with that anchor`)
      }
    }
  }
  return problems
}

function argumentAfter(tokens: readonly string[]): string | undefined {
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]
    if (token === '--import' || token === '--require' || token === '-r') i++
    else if (!token.startsWith('-')) return token
  }
  return undefined
}

/**
 * Problems with the commands shown in shell blocks: `npm run X` (and `npm start`/`npm test`) must
 * name a script; `npx tsx P`, `node P` and `bash P` a file. `dist/…js` is the build of `…ts`.
 */
function brokenCommands(
  file: string,
  markdown: string,
  scripts: ReadonlySet<string>,
  exists: (path: string) => boolean,
): string[] {
  const problems: string[] = []
  for (const line of lines(markdown)) {
    if (line.fence === undefined || !SHELL_FENCES.has(line.fence)) continue
    const command = line.text.trim().replace(/^\$\s+/, '')
    if (command.startsWith('#')) continue
    const code = command.replace(/\s+#.*$/, '')
    for (const segment of code.split(/&&|\|\||;|\|/)) {
      // Leading VAR=value assignments are the command's environment.
      const tokens = segment.trim().split(/\s+/).filter((t) => t !== '')
      while (tokens.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(tokens[0])) tokens.shift()
      const where = `${file}:${line.number}: ${segment.trim()}`
      const [program, first, second] = tokens
      if (program === 'npm' && first === 'run' && second !== undefined) {
        if (!scripts.has(second)) problems.push(`${where}: no npm script "${second}"`)
      } else if (program === 'npm' && (first === 'start' || first === 'test')) {
        if (!scripts.has(first)) problems.push(`${where}: no npm script "${first}"`)
      } else {
        const rest =
          program === 'npx' && first === 'tsx' ? tokens.slice(2) : program === 'node' || program === 'bash' ? tokens.slice(1) : undefined
        if (rest === undefined) continue
        const path = argumentAfter(rest)
        if (path === undefined) continue
        const source = path.startsWith('dist/') ? path.slice('dist/'.length).replace(/\.js$/, '.ts') : path
        if (!exists(source)) problems.push(`${where}: no file ${source}`)
      }
    }
  }
  return problems
}

function markdownFiles(): string[] {
  const out = ['README.md']
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const path = join(dir, name)
      if (statSync(join(ROOT, path)).isDirectory()) walk(path)
      else if (name.endsWith('.md')) out.push(path)
    }
  }
  walk('docs')
  return out
}

function readRepo(path: string): string | undefined {
  const absolute = join(ROOT, path)
  if (relative(ROOT, absolute).startsWith('..') || !existsSync(absolute)) return undefined
  return statSync(absolute).isDirectory() ? '' : readFileSync(absolute, 'utf8')
}

describe('the docs checker', () => {
  it('makes GitHub anchors', () => {
    expect(slug('Edge API (what clients call)')).toBe('edge-api-what-clients-call')
    expect(slug('Faults: what a request gets when a dependency stalls or dies')).toBe(
      'faults-what-a-request-gets-when-a-dependency-stalls-or-dies',
    )
    expect(slug('Local dev: request bodies under `wrangler dev`')).toBe('local-dev-request-bodies-under-wrangler-dev')
    expect([...anchors('# A\n## Backend\n```sh\n# not a heading\n```\n### Backend\n')]).toEqual(['a', 'backend', 'backend-1'])
  })

  it('finds a missing file, a missing anchor, and passes good links', () => {
    const files: Record<string, string> = { 'docs/a.md': '# A\n## Part two\n', 'docs/b.png': '' }
    const read = (path: string): string | undefined => files[path]
    const doc = [
      '[ok](a.md#part-two) ![img](b.png) [self](#top) [web](https://example.com/x)',
      '[gone](c.md) [bad](a.md#part-three) `[not a link](nowhere.md)`',
      '```sh',
      '[in code](nowhere.md)',
      '```',
      '# Top',
    ].join('\n')
    expect(brokenLinks('docs/x.md', doc, (p) => (p === 'docs/x.md' ? doc : read(p)))).toEqual([
      'docs/x.md:2: c.md: no such file',
      'docs/x.md:2: a.md#part-three: no heading with that anchor',
    ])
  })

  it('finds commands that name no script or file', () => {
    const doc = [
      '```sh',
      'npm ci && npm run build   # npm run gone in a comment is not a command',
      'uptime; BENCH_X=1 npm run bench:nope',
      'node --import tsx backend/server.ts',
      'node dist/backend/server.js',
      'npx tsx load/missing.ts',
      '# npm run also-not-a-command',
      '```',
      '```',
      'npm run untyped-block-is-not-shell',
      '```',
    ].join('\n')
    const files = new Set(['backend/server.ts'])
    expect(brokenCommands('README.md', doc, new Set(['build']), (p) => files.has(p))).toEqual([
      'README.md:3: BENCH_X=1 npm run bench:nope: no npm script "bench:nope"',
      'README.md:6: npx tsx load/missing.ts: no file load/missing.ts',
    ])
  })
})

describe('README.md and docs/', () => {
  const files = markdownFiles()
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  const scripts = new Set(Object.keys(pkg.scripts))

  it.each(files)('%s: every relative link resolves', (file) => {
    expect(brokenLinks(file, readRepo(file) ?? '', readRepo)).toEqual([])
  })

  it.each(files)('%s: every shown command names a script or file that exists', (file) => {
    expect(brokenCommands(file, readRepo(file) ?? '', scripts, (p) => existsSync(join(ROOT, p)))).toEqual([])
  })

  it('the README stays a five-minute read', () => {
    expect((readRepo('README.md') ?? '').split('\n').length).toBeLessThanOrEqual(250)
  })
})
