import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration suites start real servers with real onnxruntime sessions; on 2 cores they
    // measure each other's latency if run side by side.
    fileParallelism: false,
    // Servers and the edge log a JSON line per request; show them only for tests that fail.
    silent: 'passed-only',
  },
})
