/** POST /admin/hosts/{server_id}/clear: an operator ends a host's avoidance (issue 31 §2); signed v2, scope `admin`. */
import { adminHostsDepsFromEnv, createAdminHostsClearHandler } from './admin-hosts';

export const handler = createAdminHostsClearHandler(adminHostsDepsFromEnv());
