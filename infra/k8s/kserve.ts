import { Model } from '@kubernetes-models/base'
import type { IObjectMeta } from '@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta'
import type { IDeploymentStrategy } from 'kubernetes-models/apps/v1/DeploymentStrategy'
import { Pod } from 'kubernetes-models/v1/Pod'
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec'
import { scaledObject } from './autoscaling.ts'
import { IRSA_SKIP_ANNOTATION, deployment, networkPolicy, podDisruptionBudget, selectorLabels, serviceMonitor, type Variant } from './backend.ts'
import type { ClusterConfig } from './config.ts'

/**
 * The backend as a KServe InferenceService, for clusters that already run KServe: the Deployment's
 * pod (image, ports, probes, resources, env, model fetch, security context) handed to KServe as a
 * custom predictor in Standard mode (KServe ≥ 0.16's name for RawDeployment), scaled by the
 * project's KEDA ScaledObject. docs/deploy.md says why each choice.
 */

/** KServe names the predictor's Deployment and Service `<isvc>-predictor` (constants.PredictorServiceName). */
export const predictorName = (c: ClusterConfig): string => `${c.name}-predictor`

/**
 * The names the predictor-scoped objects are derived from: KServe's Service carries the predictor's
 * labels, so the pods cannot share the Deployment's `app.kubernetes.io/name` without base.yaml's
 * ServiceMonitor scraping every pod twice (once per Service).
 */
export const predictorConfig = (c: ClusterConfig): ClusterConfig => ({ ...c, name: predictorName(c) })

/** KServe renames a lone custom container to this (CustomPredictor.Default); rendered so, the IRSA annotation names what runs. */
export const KSERVE_CONTAINER = 'kserve-container'

export const DEPLOYMENT_MODE_ANNOTATION = 'serving.kserve.io/deploymentMode'
export const AUTOSCALER_CLASS_ANNOTATION = 'serving.kserve.io/autoscalerClass'
/**
 * Standard: KServe makes a plain Deployment and Service, keeps the container's probes and every port.
 * Serverless (Knative) allows one container port (the metrics port would go) and scales on
 * concurrency at its queue-proxy, which cannot see the batcher's queue.
 */
export const DEPLOYMENT_MODE = 'Standard'
/** external: KServe makes no HPA and leaves the Deployment's replica count to the ScaledObject below. */
export const AUTOSCALER_CLASS = 'external'
/** A custom predictor declares its protocol in this variable (CustomPredictor.GetProtocol); the CRD has no protocolVersion field for it. */
export const PROTOCOL_ENV = { name: 'PROTOCOL', value: 'v2' } as const

export interface IPredictorSpec extends IPodSpec {
  labels?: Record<string, string>
  annotations?: Record<string, string>
  deploymentStrategy?: IDeploymentStrategy
}

export interface IInferenceService {
  apiVersion: 'serving.kserve.io/v1beta1'
  kind: 'InferenceService'
  metadata: IObjectMeta
  spec: { predictor: IPredictorSpec }
}

export class InferenceService extends Model<IInferenceService> implements IInferenceService {
  static readonly apiVersion = 'serving.kserve.io/v1beta1'
  static readonly kind = 'InferenceService'
  declare apiVersion: IInferenceService['apiVersion']
  declare kind: IInferenceService['kind']
  declare metadata: IObjectMeta
  declare spec: IInferenceService['spec']

  constructor(data: Omit<IInferenceService, 'apiVersion' | 'kind'>) {
    super()
    // Assigned first so they lead the rendered YAML, as in the generated models.
    this.apiVersion = InferenceService.apiVersion
    this.kind = InferenceService.kind
    this.setDefinedProps(data)
  }

  /**
   * The pod part against Kubernetes' own PodSpec schema; the whole object against KServe's CRD is
   * test/infra/k8s/kserve.test.ts's (the CRD is a test fixture, not a runtime dependency).
   */
  override validate(): void {
    const { labels: _l, annotations: _a, deploymentStrategy: _d, ...podSpec } = this.spec.predictor
    new Pod({ metadata: { name: this.metadata.name ?? '' }, spec: podSpec }).validate()
  }
}

export const inferenceService = (c: ClusterConfig, variant: Variant) => {
  const p = predictorConfig(c)
  const { metadata, spec } = deployment(c, variant)
  const template = spec!.template
  const pod = template.spec!
  return new InferenceService({
    metadata: {
      name: c.name,
      namespace: c.namespace,
      labels: metadata!.labels!,
      annotations: { [DEPLOYMENT_MODE_ANNOTATION]: DEPLOYMENT_MODE, [AUTOSCALER_CLASS_ANNOTATION]: AUTOSCALER_CLASS },
    },
    spec: {
      predictor: {
        ...pod,
        // Pod (and KServe Service) labels: the Deployment's, named for the predictor.
        labels: { ...template.metadata!.labels!, ...selectorLabels(p) },
        ...(template.metadata!.annotations?.[IRSA_SKIP_ANNOTATION] === undefined ? {} : { annotations: { [IRSA_SKIP_ANNOTATION]: KSERVE_CONTAINER } }),
        deploymentStrategy: spec!.strategy!,
        topologySpreadConstraints: pod.topologySpreadConstraints!.map((t) => ({ ...t, labelSelector: { matchLabels: selectorLabels(p) } })),
        containers: pod.containers.map((container) => ({ ...container, name: KSERVE_CONTAINER, env: [PROTOCOL_ENV, ...container.env!] })),
      },
    },
  })
}

/**
 * What selects and scales the predictor's pods: base.yaml's builders at the predictor's name. The
 * ScaledObject is the project's (queue depth and request rate, fallback, scale-up/down behaviour),
 * aimed at KServe's Deployment; its queries name KServe's Service, the `service` label the
 * ServiceMonitor's scrape adds.
 */
export const predictorObjects = (c: ClusterConfig) => {
  const p = predictorConfig(c)
  return [serviceMonitor(p), podDisruptionBudget(p), networkPolicy(p), scaledObject(p)]
}
