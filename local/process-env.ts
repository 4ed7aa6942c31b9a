/** The local runtime's handling of process.env (runtime.ts): the handlers read their settings from it. */

/** process.env without undefined values. */
export const definedEnv = (env: NodeJS.ProcessEnv | Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));

/** Locally secrets are plain variables; an `*_ARN` would make a handler call Secrets Manager. */
export const withoutSecretArns = (env: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(env).filter(
      ([key]) =>
        !/_SECRET_ARN$|^(WEBHOOK_SECRET|MARKETPLACE_API_KEY|CHAT_WEBHOOKS_SECRET|SLACK_SIGNING_SECRET|CALLBACK_SIGNING_SECRET)_ARN$/.test(
          key,
        ),
    ),
  );

/** Sets the variables and returns a function that restores the previous values. */
export const applyEnv = (env: Readonly<Record<string, string>>): (() => void) => {
  const previous = new Map<string, string | undefined>();
  for (const [key, value] of Object.entries(env)) {
    previous.set(key, process.env[key]);
    process.env[key] = value;
  }
  for (const key of Object.keys(process.env)) {
    if (/_ARN$/.test(key) && !(key in env) && /SECRET|API_KEY|WEBHOOK/.test(key)) {
      previous.set(key, process.env[key]);
      delete process.env[key];
    }
  }
  for (const key of ['AWS_SESSION_TOKEN', 'AWS_PROFILE']) {
    if (process.env[key] !== undefined) {
      previous.set(key, process.env[key]);
      delete process.env[key];
    }
  }
  return () => {
    for (const [key, value] of previous) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
};
