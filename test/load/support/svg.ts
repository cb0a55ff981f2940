import { chromium, type Browser } from 'playwright-core'

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/** What a real XML parser (Chromium's DOMParser) makes of an SVG document. */
export interface ParsedSvg {
  /** The parser's complaint; null when the document is well-formed. */
  error: string | null
  root: string
  /** Per `<g id>`: how many circles and the points of its polyline. */
  groups: Record<string, { circles: number; points: number; text: string }>
  slaY: number | null
}

let browser: Browser | undefined

/** The few DOM members the parse reads (this project's lib has no DOM; the code runs in Chromium). */
interface XmlElement {
  id: string
  nodeName: string
  textContent: string | null
  getAttribute(name: string): string | null
  querySelector(selector: string): XmlElement | null
  querySelectorAll(selector: string): ArrayLike<XmlElement>
  getElementsByTagName(name: string): ArrayLike<XmlElement>
}
interface XmlDocument extends XmlElement {
  documentElement: XmlElement
}

export const parseSvg = async (svg: string): Promise<ParsedSvg> => {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true })
  const page = await browser.newPage()
  try {
    return await page.evaluate((text) => {
      const { DOMParser } = globalThis as unknown as { DOMParser: new () => { parseFromString(text: string, type: string): XmlDocument } }
      const doc = new DOMParser().parseFromString(text, 'image/svg+xml')
      const error = doc.getElementsByTagName('parsererror')[0]?.textContent ?? null
      const groups: Record<string, { circles: number; points: number; text: string }> = {}
      for (const g of Array.from(doc.querySelectorAll('g[id]'))) {
        const points = g.querySelector('polyline')?.getAttribute('points')?.trim().split(/\s+/).length ?? 0
        groups[g.id] = { circles: g.querySelectorAll('circle').length, points, text: g.textContent ?? '' }
      }
      const sla = doc.querySelector('#sla line')?.getAttribute('y1')
      return { error, root: doc.documentElement.nodeName, groups, slaY: sla == null ? null : Number(sla) }
    }, svg)
  } finally {
    await page.close()
  }
}

export const closeSvgParser = async (): Promise<void> => {
  await browser?.close()
  browser = undefined
}
