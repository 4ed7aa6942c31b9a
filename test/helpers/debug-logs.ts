/**
 * Import first, before any relay module: the handlers' logger is then built at DEBUG (unit tests
 * run it SILENT). Its level has to be the initial one: Powertools' `injectLambdaContext` puts the
 * logger back to its initial level on every warm invocation, so a `setLogLevel` would not last.
 */
process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';

export {};
