/** The admin route of caller keys that deletes a revoked one (DELETE /admin/keys/{name}): signed, scope `admin` (issue 29 §7). */
import { createAdminKeysDeleteHandler } from './admin-keys';
import { adminKeysDepsFromEnv } from './deps';

export const handler = createAdminKeysDeleteHandler(adminKeysDepsFromEnv());
