/** Kept for importers outside the project's own code (bench/): the route table lives in contract/routes.ts. */
export * from '../contract/routes';
