import { Counter, Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { TallyCounter, TallyHistogram } from '../../../backend/monitor/tally.ts'

const BUCKETS = [0.001, 0.01, 0.1, 1]

/** prom-client's text for the same metric, the format the tallies must reproduce. */
const promClientText = async (make: (registry: Registry) => void): Promise<string> => {
  const registry = new Registry()
  make(registry)
  return (await registry.metrics()).trim()
}

describe('TallyHistogram', () => {
  it('renders exactly what prom-client renders for the same observations, bucket edges included', async () => {
    const values = [0.0005, 0.001, 0.0011, 0.01, 0.5, 1, 3, 0.05]
    const tally = new TallyHistogram('t_seconds', 'Time\nspent', ['model', 'version'], BUCKETS)
    const a = tally.bind({ model: 'm', version: '1' })
    const b = tally.bind({ model: 'q"x\\', version: '2' })
    for (const v of values) a(v)
    b(0.02)
    const expected = await promClientText((registry) => {
      const h = new Histogram({ name: 't_seconds', help: 'Time\nspent', labelNames: ['model', 'version'], buckets: BUCKETS, registers: [registry] })
      for (const v of values) h.observe({ model: 'm', version: '1' }, v)
      h.observe({ model: 'q"x\\', version: '2' }, 0.02)
    })
    expect(tally.render()).toBe(expected)
  })

  it('exports a bound series at zero before its first observation and ignores non-finite values', () => {
    const tally = new TallyHistogram('t_seconds', 'h', ['model'], BUCKETS)
    const observe = tally.bind({ model: 'm' })
    expect(tally.render()).toContain('t_seconds_count{model="m"} 0')
    observe(Number.NaN)
    observe(Number.POSITIVE_INFINITY)
    expect(tally.render()).toContain('t_seconds_count{model="m"} 0')
    expect(tally.render()).toContain('t_seconds_sum{model="m"} 0')
  })

  it('refuses a label set that is not its label names, and ascending-less buckets', () => {
    const tally = new TallyHistogram('t_seconds', 'h', ['model', 'version'], BUCKETS)
    expect(() => tally.bind({ model: 'm' })).toThrow(/takes the labels model, version/)
    expect(() => tally.bind({ model: 'm', version: '1', extra: 'x' })).toThrow(/takes the labels/)
    expect(() => new TallyHistogram('x', 'h', [], [1, 1])).toThrow(/ascending/)
  })
})

describe('TallyCounter', () => {
  it('renders what prom-client renders, one series per label set however often it is bound', async () => {
    const tally = new TallyCounter('c_total', 'Requests', ['model', 'status'])
    tally.bind({ model: 'm', status: '200' })(3)
    tally.bind({ model: 'm', status: '200' })()
    tally.bind({ model: 'm', status: '429' })()
    const expected = await promClientText((registry) => {
      const c = new Counter({ name: 'c_total', help: 'Requests', labelNames: ['model', 'status'], registers: [registry] })
      c.inc({ model: 'm', status: '200' }, 4)
      c.inc({ model: 'm', status: '429' })
    })
    expect(tally.render()).toBe(expected)
  })

  it('escapes a label value with a newline (and a quote and a backslash) as prom-client does', async () => {
    const model = 'line one\nline "two" \\ end\n'
    const tally = new TallyCounter('c_total', 'Requests', ['model'])
    tally.bind({ model })(2)
    const expected = await promClientText((registry) => {
      new Counter({ name: 'c_total', help: 'Requests', labelNames: ['model'], registers: [registry] }).inc({ model }, 2)
    })
    expect(tally.render()).toBe(expected)
    // One series on one line: a raw newline would have cut it in two.
    expect(tally.render().split('\n')).toHaveLength(3)
  })
})
