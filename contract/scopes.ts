/** What a caller key may do (issue 24). The implicit `default` key (the shared webhook secret) has every scope. */
export const SCOPES = ['order', 'cancel', 'read', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];
