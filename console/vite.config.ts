import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

/**
 * The operator console: built into the worker (npm run console:build writes
 * edge/console/assets.generated.ts), served at /console/. Nothing inline: no module-preload
 * polyfill, no assets turned into data: URLs, so the page runs under a CSP of 'self' only.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  logLevel: 'warn',
  build: {
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
})
