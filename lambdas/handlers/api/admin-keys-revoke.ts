/** The admin route of caller keys that revokes one (POST /admin/keys/{name}/revoke): signed, scope `admin` (issue 24). */
import { createAdminKeysRevokeHandler } from './admin-keys';
import { adminKeysDepsFromEnv } from './deps';

export const handler = createAdminKeysRevokeHandler(adminKeysDepsFromEnv());
