// Tests never talk to real AWS: fake credentials and a fixed region for every SDK client.
process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_ACCESS_KEY_ID ??= 'test';
process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
process.env.POWERTOOLS_DEV ??= 'false';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.CDK_VALIDATION ??= 'false';
// The local runtime enforces the synthesized stack's IAM policies in every test (docs/local-runtime.md).
process.env.IAM_CHECKS ??= 'enforce';
