/** POST /admin/hosts/{server_id}/avoid: an operator avoids a host (issue 31 §2); signed v2, scope `admin`. */
import { adminHostsDepsFromEnv, createAdminHostsAvoidHandler } from './admin-hosts';

export const handler = createAdminHostsAvoidHandler(adminHostsDepsFromEnv());
