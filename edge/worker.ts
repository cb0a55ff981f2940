import { createApp } from './app.ts'

/** The Cloudflare Workers entry point (wrangler.toml `main`). */
export default createApp()
