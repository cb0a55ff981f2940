// k6 run -e TARGET=https://… -e API_KEY=… load/k6/soak.js  (scenario and SLA: load/scenarios/shapes.js)
import { iterationFor, optionsFor } from './lib.js'

export { setup } from './lib.js'
export const options = optionsFor('soak')
export default iterationFor('soak')
