import { z } from 'zod'
import { DATATYPES } from '../../shared/datatypes.ts'
import { featureSpec } from '../../shared/feature-spec.ts'
import { postprocess } from '../../shared/postprocess.ts'
import { feedbackConfig } from '../../shared/feedback-config.ts'

/** One tensor of the model signature; `dims` excludes the batch dimension when batching is on. */
const tensorConfig = z.strictObject({
  name: z.string().min(1),
  datatype: z.enum(DATATYPES),
  dims: z.array(z.number().int().min(-1)).min(0),
  /** Allow NaN/Infinity in this input (floats only); refused by default. */
  allow_non_finite: z.boolean().default(false),
})

/** When a batch leaves: see the Batcher for the two policies. */
export const DISPATCH_POLICIES = ['idle', 'delay'] as const
export type DispatchPolicy = (typeof DISPATCH_POLICIES)[number]

const dynamicBatching = z.strictObject({
  /**
   * `idle`: what is queued goes at once to a free instance; batches form only while every
   * instance is busy. `delay`: Triton's batcher, waiting up to max_queue_delay_us for company.
   */
  dispatch: z
    .enum(DISPATCH_POLICIES, { error: (issue) => `dispatch must be "idle" (send at once to a free instance) or "delay" (wait up to max_queue_delay_us, as Triton does), not ${JSON.stringify(issue.input)}` })
    .default('idle'),
  /** Under `delay`: how long the oldest queued request may wait for company before its batch is sent. */
  max_queue_delay_us: z.number().int().min(0).default(2_000),
  /** Under `delay`: batch sizes that are sent at once when the queue can form them. */
  preferred_batch_sizes: z.array(z.number().int().positive()).default([]),
  /** Rows waiting beyond which new requests are refused with 429. */
  max_queue_size: z.number().int().positive().default(4_096),
  /** Deadline of a request that names none; 0 means no deadline. */
  default_timeout_us: z.number().int().min(0).default(0),
})

const versionPolicy = z.union([
  z.strictObject({ latest: z.number().int().positive() }),
  z.strictObject({ all: z.literal(true) }),
  z.strictObject({ specific: z.array(z.number().int().positive()).min(1) }),
])

export const modelConfig = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'model names are lower-case, digits, ".", "_" or "-"'),
    platform: z.literal('onnxruntime'),
    /** 0 disables batching: the model takes its inputs exactly as declared. */
    max_batch_size: z.number().int().min(0).default(0),
    inputs: z.array(tensorConfig).min(1),
    outputs: z.array(tensorConfig.omit({ allow_non_finite: true })).min(1),
    dynamic_batching: dynamicBatching.optional(),
    instance_count: z.number().int().min(1).max(64).default(1),
    execution_providers: z.array(z.enum(['cuda', 'cpu'])).min(1).default(['cpu']),
    /** Intra-op threads per instance; 1 measured best on small CPU hosts. */
    intra_op_threads: z.number().int().min(1).default(1),
    version_policy: versionPolicy.default({ latest: 1 }),
    /** Keep resident: never unloaded to fit the memory budget, loaded at start-up. */
    pinned: z.boolean().default(false),
    features: featureSpec.optional(),
    postprocess: postprocess.optional(),
    /** Opts the model in to feedback: the edge keeps its served predictions for their labels. */
    feedback: feedbackConfig.optional(),
  })
  .superRefine((cfg, ctx) => {
    for (const size of cfg.dynamic_batching?.preferred_batch_sizes ?? []) {
      if (size > cfg.max_batch_size) {
        ctx.addIssue({ code: 'custom', path: ['dynamic_batching', 'preferred_batch_sizes'], message: `preferred size ${size} exceeds max_batch_size ${cfg.max_batch_size}` })
      }
    }
    if (cfg.dynamic_batching && cfg.max_batch_size === 0) {
      ctx.addIssue({ code: 'custom', path: ['dynamic_batching'], message: 'dynamic batching needs max_batch_size > 0' })
    }
    if (cfg.features && !cfg.inputs.some((i) => i.name === cfg.features?.input)) {
      ctx.addIssue({ code: 'custom', path: ['features', 'input'], message: `no input named "${cfg.features.input}"` })
    }
    if (cfg.postprocess && !cfg.outputs.some((o) => o.name === cfg.postprocess?.output)) {
      ctx.addIssue({ code: 'custom', path: ['postprocess', 'output'], message: `no output named "${cfg.postprocess.output}"` })
    }
    // Realized quality is binned over P(labels[1]): feedback needs a two-label postprocess, and a label for each of its classes.
    if (cfg.feedback && cfg.postprocess?.labels.length !== 2) {
      ctx.addIssue({ code: 'custom', path: ['feedback'], message: 'feedback needs a postprocess with exactly two labels' })
    } else if (cfg.feedback?.labels && cfg.feedback.labels.length !== 2) {
      ctx.addIssue({ code: 'custom', path: ['feedback', 'labels'], message: `feedback labels name the postprocess's 2 classes in order; got ${cfg.feedback.labels.length}` })
    }
  })

export type ModelConfig = z.infer<typeof modelConfig>
export type ModelConfigInput = z.input<typeof modelConfig>
export type TensorConfig = z.infer<typeof tensorConfig>
