/** The worker's bindings for the Lambda tier on a local Invoke endpoint (dev/lambda-endpoint), with throwaway credentials. */
export const lambdaBindings = (functionName: string, endpointUrl: string): Record<string, string> => ({
  LAMBDA_FUNCTION: functionName,
  LAMBDA_REGION: 'eu-west-1',
  LAMBDA_ENDPOINT: endpointUrl,
  AWS_ACCESS_KEY_ID: 'AKIDLOCALTEST',
  AWS_SECRET_ACCESS_KEY: LOCAL_SECRET_ACCESS_KEY,
})

/** The secret in those bindings: a test can check that it never reaches a log. */
export const LOCAL_SECRET_ACCESS_KEY = 'local-secret-access-key'
