/** Open Inference Protocol tensor datatypes and how each is held in JavaScript. */
export const DATATYPES = [
  'BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64',
  'FP16', 'FP32', 'FP64', 'BYTES',
] as const
export type Datatype = (typeof DATATYPES)[number]

/** Datatypes whose values are floating point, where NaN and Infinity can appear. */
export const FLOAT_DATATYPES: ReadonlySet<Datatype> = new Set(['FP16', 'FP32', 'FP64'])

/** Inclusive value range of each integer datatype (64-bit ones limited to safe JSON integers). */
export const INTEGER_RANGES: Readonly<Partial<Record<Datatype, readonly [number, number]>>> = {
  UINT8: [0, 255],
  UINT16: [0, 65_535],
  UINT32: [0, 4_294_967_295],
  UINT64: [0, Number.MAX_SAFE_INTEGER],
  INT8: [-128, 127],
  INT16: [-32_768, 32_767],
  INT32: [-2_147_483_648, 2_147_483_647],
  INT64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
}
