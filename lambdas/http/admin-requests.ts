/**
 * Request bodies of the admin routes: POST /admin/keys, PUT /admin/keys/{name}/ssh-key and POST
 * /admin/hosts/{server_id}/avoid, one module each in admin-bodies/ (a route's bundle builds only its
 * own body at import; BENCHMARKS.md §15), gathered here for requests.ts and the tests.
 */
export * from './admin-bodies/keys';
export * from './admin-bodies/ssh-key';
export * from './admin-bodies/hosts';
