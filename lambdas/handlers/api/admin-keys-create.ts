/** The admin route of caller keys that creates one (POST /admin/keys): signed, scope `admin` (issue 24). */
import { createAdminKeysCreateHandler } from './admin-keys';
import { adminKeysDepsFromEnv } from './deps';

export const handler = createAdminKeysCreateHandler(adminKeysDepsFromEnv());
