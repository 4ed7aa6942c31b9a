/** The admin route that sets a caller key's SSH public key (PUT /admin/keys/{name}/ssh-key): signed, scope `admin` (issue 37 §2). */
import { createAdminKeysSshKeyHandler } from './admin-keys';
import { adminKeysDepsFromEnv } from './deps';

export const handler = createAdminKeysSshKeyHandler(adminKeysDepsFromEnv());
