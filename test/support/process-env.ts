/**
 * Sets variables on this process's environment (for code under test that reads it, such as the
 * Lambda handler run in-process) and returns how to put back what was there, unset ones included.
 */
export const setProcessEnv = (vars: Record<string, string>): (() => void) => {
  const previous = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]))
  Object.assign(process.env, vars)
  return () => {
    for (const [name, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
}
