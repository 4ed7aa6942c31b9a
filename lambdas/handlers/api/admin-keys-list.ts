/** The admin route of caller keys that lists them (GET /admin/keys): signed, scope `admin` (issue 24). */
import { createAdminKeysListHandler } from './admin-keys';
import { adminKeysDepsFromEnv } from './deps';

export const handler = createAdminKeysListHandler(adminKeysDepsFromEnv());
