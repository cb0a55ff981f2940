// What the Lambda tier takes from the AWS SDK, imported dynamically by lambda.ts: a dynamic import
// keeps every export of the module it names, and the SDK's index exports every Lambda command.
export { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda'
