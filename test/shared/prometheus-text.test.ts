import { describe, expect, it } from 'vitest'
import { parsePrometheusText } from '../../shared/prometheus-text.ts'

describe('parsePrometheusText', () => {
  it('reads names, labels, values and timestamps, and skips comments and blank lines', () => {
    const text = [
      '# HELP rows_total Rows, by model',
      '# TYPE rows_total counter',
      'rows_total{model="m",version="2"} 17',
      '',
      '# a free comment',
      'up 1 1700000000123',
      'size_bucket{le="+Inf",model="m"} 5',
      'size_bucket{le="0.5" , model="m",} 3',
      'temperature -1.5e-3',
      'nothing_yet NaN',
      'floor{} -Inf',
      '  padded_gauge   2  ',
    ].join('\n')
    expect(parsePrometheusText(text)).toEqual([
      { name: 'rows_total', labels: { model: 'm', version: '2' }, value: 17 },
      { name: 'up', labels: {}, value: 1, timestampMs: 1700000000123 },
      { name: 'size_bucket', labels: { le: '+Inf', model: 'm' }, value: 5 },
      { name: 'size_bucket', labels: { le: '0.5', model: 'm' }, value: 3 },
      { name: 'temperature', labels: {}, value: -0.0015 },
      { name: 'nothing_yet', labels: {}, value: Number.NaN },
      { name: 'floor', labels: {}, value: -Infinity },
      { name: 'padded_gauge', labels: {}, value: 2 },
    ])
  })

  it('reads +Inf as a value', () => {
    expect(parsePrometheusText('limit +Inf\n')).toEqual([{ name: 'limit', labels: {}, value: Infinity }])
  })

  it('unescapes \\\\, \\" and \\n in label values, and keeps }, commas and spaces inside them', () => {
    const [sample] = parsePrometheusText(String.raw`errors_total{path="C:\\dir",msg="say \"hi\"\nbye",odd="a},b= c"} 2`)
    expect(sample.labels).toEqual({ path: 'C:\\dir', msg: 'say "hi"\nbye', odd: 'a},b= c' })
    expect(sample.value).toBe(2)
  })

  it('keeps a backslash before any other character, as Prometheus does', () => {
    expect(parsePrometheusText(String.raw`x{p="a\tb"} 1`)[0].labels.p).toBe('a\\tb')
  })

  it('names the line it cannot read', () => {
    expect(() => parsePrometheusText('ok 1\n<html>')).toThrow(/line 2/)
    expect(() => parsePrometheusText('x{a="1"')).toThrow(/unterminated|expected/)
    expect(() => parsePrometheusText('x{a="1"} many')).toThrow(/not a sample value/)
    expect(() => parsePrometheusText('x 1 now')).toThrow(/not a timestamp/)
    expect(() => parsePrometheusText('x')).toThrow(/not a sample value/)
  })
})
