// The e2e-live jest project: the same e2e files against the simulator in production's dialect.
process.env.MARKETPLACE_DIALECT = 'live';
