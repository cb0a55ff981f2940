import type { Context } from 'hono'
import * as z from 'zod'
import { CONSOLE_FILES } from '../console/assets.generated.ts'
import type { StageEnv } from '../pipeline/stage.ts'
import { Problem } from '../problem.ts'
import { answer, route } from './route.ts'

/**
 * The console's policy: its own scripts, styles and API calls only. No inline script or style
 * (the built page has none), no plugins, no framing, no form posts, no base rewrites.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
}

const INDEX = 'index.html'

// Through c.body(), so the headers earlier stages set (request id, secure headers) reach it too.
const serve = (c: Context<StageEnv<object>>, file: string): Response => {
  const body = Object.hasOwn(CONSOLE_FILES, file) ? CONSOLE_FILES[file] : undefined
  const type = CONTENT_TYPES[file.slice(file.lastIndexOf('.') + 1)]
  if (body === undefined || type === undefined) throw new Problem(404, 'Not Found', `the console has no file ${file}`)
  return c.body(body, 200, {
    'content-type': type,
    'content-security-policy': CONSOLE_CSP,
    'cross-origin-opener-policy': 'same-origin',
    // Asset names carry a hash of their content; the page names the current ones.
    'cache-control': file === INDEX ? 'no-cache' : 'public, max-age=31536000, immutable',
  })
}

const page = z.string()

/**
 * `GET /console`: the operator console, a static page built by Vite from console/ and bundled
 * into the worker (edge/console/assets.generated.ts). It needs no key to load; it asks for an
 * admin key and calls the admin API with it.
 */
export const consoleRoutes = () => [
  route({
    method: 'get',
    path: '/console',
    guard: 'none',
    operationId: 'getConsole',
    summary: 'The operator console page',
    description: 'No key: the page asks for an admin key and calls the admin API with it. Served with a strict Content-Security-Policy.',
    tag: 'meta',
    answers: { 200: { description: 'the console', schema: page, type: 'text/html' } },
    problems: [500],
    handle: answer(function getConsole(c) {
      return serve(c, INDEX)
    }),
  }),
  route({
    method: 'get',
    path: '/console/assets/:file',
    guard: 'none',
    operationId: 'getConsoleAsset',
    summary: 'A script, stylesheet or icon of the console',
    tag: 'meta',
    parameters: ['ConsoleFile'],
    answers: { 200: { description: 'the file', schema: page, type: 'text/javascript' } },
    problems: [404, 500],
    handle: answer(function getConsoleAsset(c) {
      return serve(c, `assets/${c.req.param().file}`)
    }),
  }),
] as const
