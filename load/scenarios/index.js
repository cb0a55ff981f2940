/** Scenarios defined once for every runner: k6 (`load/k6/`) and Node (`npm run load`, `load:capacity`). */
export { createRandom } from './random.js'
export { DEFAULT_MIX, SEEDED_USER_IDS, createPayloads } from './payloads.js'
export { SCENARIOS, SCENARIO_NAMES, crossedThresholds, k6Options, k6Thresholds, rateAt, scaled, totalDurationS } from './shapes.js'
export { createZipfPayloads, zipfSampler } from './zipf.js'
