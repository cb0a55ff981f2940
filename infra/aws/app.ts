import { App } from 'aws-cdk-lib'
import { lambdaTierOptionsFromContext } from './context.ts'
import { LambdaTierStack } from './lambda-tier-stack.ts'

/**
 * `cd infra/aws && npx cdk synth|deploy` (cdk.json runs this file). The stack is bound to the CLI's
 * account and region when it has credentials; offline it synthesises environment-agnostic.
 */
const app = new App()
const account = process.env.CDK_DEFAULT_ACCOUNT
const region = process.env.CDK_DEFAULT_REGION
new LambdaTierStack(app, 'EdgeInferLambdaTier', {
  ...(account && region ? { env: { account, region } } : {}),
  description: 'edge-infer: the Lambda CPU fallback tier and the IAM user the edge invokes it with',
  ...lambdaTierOptionsFromContext((key) => app.node.tryGetContext(key)),
})
app.synth()
