/**
 * The Node version check the CLI runs before anything else: the tools use Node 24 APIs
 * (Float16Array among them), and an older Node should say so in one line, not fail on the first use.
 * Plain JavaScript, so that any Node can load it.
 */
export const MIN_NODE_MAJOR = 24

/** The one-line message for a Node too old to run edge-infer, or undefined when `version` will do. */
export const nodeVersionProblem = (version = process.versions.node) => {
  const major = Number(String(version).split('.')[0])
  if (Number.isInteger(major) && major >= MIN_NODE_MAJOR) return undefined
  return `edge-infer needs Node ${MIN_NODE_MAJOR} or newer (this is Node ${version}); run it through npm (npm ci brings Node ${MIN_NODE_MAJOR}) or install Node ${MIN_NODE_MAJOR}`
}
